package collector

import (
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// TestLifecycleMetrics: provision states per conductor (unknown names as
// "other"), maintenance, affinity, stranded boot environments and stuck
// nodes, with bounded labels.
func TestLifecycleMetrics(t *testing.T) {
	n := func(id int64, uuid, group, state string, affinity int32, reservation string) *db.Node {
		x := fixture.Node(id, uuid, group, "ipmi")
		x.ProvisionState = fixture.Ptr(state)
		fixture.SetAffinity(x, affinity)
		if reservation != "" {
			x.Reservation = fixture.Ptr(reservation)
		}
		return x
	}
	n1 := n(1, "a1", "", "active", 2, "")
	n1.Maintenance = true
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		fixture.Conductor(1, "c-up", "", true, fixture.Ago(5*time.Second), "ipmi"),
		fixture.Conductor(2, "c-dead", "", true, fixture.Ago(time.Hour), "ipmi"),
	}, Nodes: []*db.Node{n1, n(2, "a2", "", "clean wait", 1, "c-dead"), n(3, "a3", "", "Some Free Text", 7, ""),
		n(4, "a4", "rack9", "wait call-back", 0, "")}}
	cache := newTestCache(t, fixture.NewSource(snap), time.Minute)
	h := metricsHandler(cache, ExporterOptions{})
	const want = `# HELP ironic_conductor_provision_state_nodes Nodes the hash rings map to this conductor, by provision state (Ironic's state names; 'other' for any other value). Zero counts are not exported.
# TYPE ironic_conductor_provision_state_nodes gauge
ironic_conductor_provision_state_nodes{conductor_group="",hostname="c-up",provision_state="active"} 1
ironic_conductor_provision_state_nodes{conductor_group="",hostname="c-up",provision_state="clean wait"} 1
ironic_conductor_provision_state_nodes{conductor_group="",hostname="c-up",provision_state="other"} 1
# HELP ironic_conductor_maintenance_nodes Nodes the hash rings map to this conductor that are in maintenance.
# TYPE ironic_conductor_maintenance_nodes gauge
ironic_conductor_maintenance_nodes{conductor_group="",hostname="c-dead"} 0
ironic_conductor_maintenance_nodes{conductor_group="",hostname="c-up"} 1
# HELP ironic_conductor_affinity_elsewhere_nodes Nodes the hash rings map to this conductor whose boot environment (conductor_affinity) another conductor prepared.
# TYPE ironic_conductor_affinity_elsewhere_nodes gauge
ironic_conductor_affinity_elsewhere_nodes{conductor_group="",hostname="c-dead"} 0
ironic_conductor_affinity_elsewhere_nodes{conductor_group="",hostname="c-up"} 2
# HELP ironic_conductor_prepared_nodes Nodes whose conductor_affinity is this conductor: it prepared, and holds, their boot environment.
# TYPE ironic_conductor_prepared_nodes gauge
ironic_conductor_prepared_nodes{conductor_group="",hostname="c-dead"} 1
ironic_conductor_prepared_nodes{conductor_group="",hostname="c-up"} 1
# HELP ironic_nodes_affinity_unavailable Deployed, rescued, held or in-progress nodes whose boot environment was prepared by a conductor that is not running (affinity=not_alive) or no longer exists (affinity=missing).
# TYPE ironic_nodes_affinity_unavailable gauge
ironic_nodes_affinity_unavailable{affinity="not_alive",conductor_group=""} 1
# HELP ironic_nodes_stuck Nodes in a state a conductor works or waits in whose lock holder is not running (reason=lock_holder_not_alive), locked by a HOST:PORT conductor that is not running, which Ironic never releases (lock_never_released), that no ring serves (no_conductor), whose ring conductor is not running (conductor_not_alive), or in a step state with no lock and no worker (no_lock_no_worker).
# TYPE ironic_nodes_stuck gauge
ironic_nodes_stuck{conductor_group="",provision_state="clean wait",reason="lock_holder_not_alive"} 1
ironic_nodes_stuck{conductor_group="rack9",provision_state="wait call-back",reason="no_conductor"} 1
`
	if err := compareScrape(t, h, want, "ironic_conductor_provision_state_nodes", "ironic_conductor_maintenance_nodes",
		"ironic_conductor_affinity_elsewhere_nodes", "ironic_conductor_prepared_nodes",
		"ironic_nodes_affinity_unavailable", "ironic_nodes_stuck"); err != nil {
		t.Error(err)
	}
	for _, p := range lintScrape(t, h) {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
