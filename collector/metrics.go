// Package collector renders the cached Ironic topology (package topology)
// as Prometheus metrics: the /metrics handler, and the cache's refresh
// metrics. It computes nothing of Ironic's: every value comes from the
// Topology.
package collector

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

const namespace = "ironic"

var (
	hostLabels = []string{"hostname", "conductor_group"}

	upDesc = prometheus.NewDesc("ironic_up",
		"1 when the latest refresh from Ironic's database worked, 0 otherwise.", nil, nil)
	conductorAliveDesc = prometheus.NewDesc("ironic_conductor_alive",
		"Ironic's API 'alive' for the conductor: its heartbeat is not older than heartbeat_timeout (1) or is (0).",
		hostLabels, nil)
	conductorOnlineDesc = prometheus.NewDesc("ironic_conductor_online",
		"The conductor's online column: 1 while registered, 0 after a clean stop.", hostLabels, nil)
	conductorStateDesc = prometheus.NewDesc("ironic_conductor_state",
		"1 for the conductor's current state (alive, draining, stopped, dead), 0 for the others.",
		append(hostLabels[:2:2], "state"), nil)
	conductorHeartbeatDesc = prometheus.NewDesc("ironic_conductor_heartbeat_timestamp_seconds",
		"The conductor's last heartbeat (updated_at) as a Unix timestamp.", hostLabels, nil)
	conductorRingMemberDesc = prometheus.NewDesc("ironic_conductor_hash_ring_member",
		"1 when the conductor is a member of its hash rings (online with a heartbeat Ironic accepts), 0 otherwise.",
		hostLabels, nil)
	conductorHardwareTypeDesc = prometheus.NewDesc("ironic_conductor_hardware_type_info",
		"1 for each hardware type the conductor registered.",
		append(hostLabels[:2:2], "hardware_type"), nil)
	conductorNodesDesc = prometheus.NewDesc("ironic_conductor_nodes",
		"Nodes the hash rings map to this conductor now.", hostLabels, nil)
	reservedNodesDesc = prometheus.NewDesc("ironic_conductor_reserved_nodes",
		"Nodes whose reservation (lock) names this host, whether or not a conductor of that name exists.",
		[]string{"hostname"}, nil)
	nodeInfoDesc = prometheus.NewDesc(nodeInfoName, nodeInfoHelp,
		[]string{"node_uuid", "node_name", "conductor_group", "driver", "conductor"}, nil)
	ringConductorsDesc = prometheus.NewDesc("ironic_hash_ring_conductors",
		"Active conductors in the hash ring of a conductor group and hardware type.",
		[]string{"conductor_group", "hardware_type"}, nil)
	ringNodesDesc = prometheus.NewDesc("ironic_hash_ring_nodes",
		"Nodes served by the hash ring of a conductor group and hardware type.",
		[]string{"conductor_group", "hardware_type"}, nil)
	nodesWithoutConductorDesc = prometheus.NewDesc("ironic_nodes_without_conductor",
		"Nodes that no hash ring can serve, by conductor group and driver.",
		[]string{"conductor_group", "driver"}, nil)
	nodesDesc = prometheus.NewDesc("ironic_nodes",
		"Nodes in Ironic's database.", nil, nil)
	changesDesc = prometheus.NewDesc("ironic_node_conductor_changes_total",
		"Nodes whose conductor changed between two refreshes since the exporter started (ring churn).",
		[]string{"conductor_group"}, nil)
	conductorProvisionDesc = prometheus.NewDesc("ironic_conductor_provision_state_nodes",
		"Nodes the hash rings map to this conductor, by provision state (Ironic's state names; 'other' for any other value). Zero counts are not exported.",
		append(hostLabels[:2:2], "provision_state"), nil)
	conductorMaintenanceDesc = prometheus.NewDesc("ironic_conductor_maintenance_nodes",
		"Nodes the hash rings map to this conductor that are in maintenance.", hostLabels, nil)
	conductorAffinityElsewhereDesc = prometheus.NewDesc("ironic_conductor_affinity_elsewhere_nodes",
		"Nodes the hash rings map to this conductor whose boot environment (conductor_affinity) another conductor prepared.",
		hostLabels, nil)
	conductorPreparedDesc = prometheus.NewDesc("ironic_conductor_prepared_nodes",
		"Nodes whose conductor_affinity is this conductor: it prepared, and holds, their boot environment.", hostLabels, nil)
	affinityUnavailableDesc = prometheus.NewDesc("ironic_nodes_affinity_unavailable",
		"Deployed, rescued, held or in-progress nodes whose boot environment was prepared by a conductor that is not running (affinity=not_alive) or no longer exists (affinity=missing).",
		[]string{"conductor_group", "affinity"}, nil)
	stuckDesc = prometheus.NewDesc("ironic_nodes_stuck",
		"Nodes in a state a conductor works or waits in whose lock holder is not running (reason=lock_holder_not_alive), that no ring serves (no_conductor), or whose ring conductor is not running (conductor_not_alive).",
		[]string{"conductor_group", "provision_state", "reason"}, nil)
	lastSuccessDesc = prometheus.NewDesc("ironic_exporter_last_refresh_success_timestamp_seconds",
		"When the served topology was read from the database, as a Unix timestamp.", nil, nil)
	dataAgeDesc = prometheus.NewDesc("ironic_exporter_data_age_seconds",
		"Age of the served topology; grows while the database cannot be read.", nil, nil)
	ironicInfoDesc = prometheus.NewDesc("ironic_exporter_ironic_info",
		"The Ironic release whose rules the topology follows, the schema revision and what told the release (alembic_version, conductors.version, flag, none).",
		[]string{"release", "schema_revision", "detected_from", "backend"}, nil)
	ringSettingsDesc = prometheus.NewDesc("ironic_exporter_hash_ring_info",
		"The hash ring settings in effect: hash_ring_algorithm as Ironic's release applies it (md5 before 15.2).",
		[]string{"hash_ring_algorithm"}, nil)
	heartbeatTimeoutDesc = prometheus.NewDesc("ironic_exporter_heartbeat_timeout_seconds",
		"The [conductor]heartbeat_timeout liveness and rings are judged with.", nil, nil)
	partitionExponentDesc = prometheus.NewDesc("ironic_exporter_hash_partition_exponent",
		"The [DEFAULT]hash_partition_exponent the rings are built with.", nil, nil)
	inexactDesc = prometheus.NewDesc("ironic_exporter_inexact_reasons",
		"Reasons the answers may not be Ironic's (unknown revision, mid-upgrade fleet, replicas above 1 before 12.2, ...); 0 when exact. The log says which.", nil, nil)
)

// ExporterOptions tunes what the exporter renders.
type ExporterOptions struct {
	// NodeInfo enables the per-node ironic_node_conductor_info series. Turn
	// it off on very large fleets to save series.
	NodeInfo bool
}

// viewCollector renders a view already taken from the cache.
type viewCollector struct {
	view topology.View
	now  time.Time
	opts ExporterOptions
}

var _ prometheus.Collector = viewCollector{}

// Describe implements prometheus.Collector.
func (c viewCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, conductorAliveDesc, conductorOnlineDesc,
		conductorStateDesc, conductorHeartbeatDesc, conductorRingMemberDesc, conductorHardwareTypeDesc,
		conductorNodesDesc, reservedNodesDesc, nodeInfoDesc, ringConductorsDesc, ringNodesDesc,
		nodesWithoutConductorDesc, nodesDesc, changesDesc, lastSuccessDesc, dataAgeDesc,
		conductorProvisionDesc, conductorMaintenanceDesc, conductorAffinityElsewhereDesc, conductorPreparedDesc,
		affinityUnavailableDesc, stuckDesc,
		ironicInfoDesc, ringSettingsDesc, heartbeatTimeoutDesc, partitionExponentDesc, inexactDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c viewCollector) Collect(ch chan<- prometheus.Metric) { collectView(ch, c.view, c.now, c.opts) }

func collectView(ch chan<- prometheus.Metric, v topology.View, now time.Time, opts ExporterOptions) {
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, boolValue(v.Up()))
	for _, g := range slices.Sorted(maps.Keys(v.Remapped)) {
		ch <- prometheus.MustNewConstMetric(changesDesc, prometheus.CounterValue, v.Remapped[g], g)
	}
	t := v.Topology
	if t == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, unixSeconds(v.LastSuccess))
	collectPerScrape(ch, v, now)
	collectTopology(ch, t, opts)
}

// collectPerScrape emits the families of v whose value depends on the
// scrape's clock, not only on v; their names are in perScrapeFamilies. The
// rest of a view is rendered once and shared by its scrapes (render.go).
func collectPerScrape(ch chan<- prometheus.Metric, v topology.View, now time.Time) {
	if v.Topology == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(dataAgeDesc, prometheus.GaugeValue, now.Sub(v.LastSuccess).Seconds())
}

func collectTopology(ch chan<- prometheus.Metric, t *topology.Topology, opts ExporterOptions) {
	d, r := t.Detection, t.Rules
	ch <- prometheus.MustNewConstMetric(ironicInfoDesc, prometheus.GaugeValue, 1,
		d.Release.String(), d.SchemaRevision, d.From, r.Backend().String())
	ch <- prometheus.MustNewConstMetric(ringSettingsDesc, prometheus.GaugeValue, 1, string(r.EffectiveAlgorithm()))
	ch <- prometheus.MustNewConstMetric(heartbeatTimeoutDesc, prometheus.GaugeValue, r.Settings().HeartbeatTimeout.Seconds())
	ch <- prometheus.MustNewConstMetric(partitionExponentDesc, prometheus.GaugeValue, float64(r.PartitionExponent()))
	ch <- prometheus.MustNewConstMetric(inexactDesc, prometheus.GaugeValue, float64(len(d.Warnings)+len(r.Exact())))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		labels := []string{c.Hostname, c.ConductorGroup}
		ch <- prometheus.MustNewConstMetric(conductorAliveDesc, prometheus.GaugeValue, boolValue(c.Alive), labels...)
		ch <- prometheus.MustNewConstMetric(conductorOnlineDesc, prometheus.GaugeValue, boolValue(c.Online), labels...)
		ch <- prometheus.MustNewConstMetric(conductorRingMemberDesc, prometheus.GaugeValue, boolValue(c.Active), labels...)
		for _, s := range r.States() {
			ch <- prometheus.MustNewConstMetric(conductorStateDesc, prometheus.GaugeValue,
				boolValue(c.State == s), c.Hostname, c.ConductorGroup, string(s))
		}
		if !c.UpdatedAt.IsZero() && t.Heartbeats {
			ch <- prometheus.MustNewConstMetric(conductorHeartbeatDesc, prometheus.GaugeValue,
				unixSeconds(c.UpdatedAt), labels...)
		}
		for _, hw := range c.HardwareTypes {
			ch <- prometheus.MustNewConstMetric(conductorHardwareTypeDesc, prometheus.GaugeValue, 1,
				c.Hostname, c.ConductorGroup, hw)
		}
		ch <- prometheus.MustNewConstMetric(conductorNodesDesc, prometheus.GaugeValue, float64(len(c.Nodes)), labels...)
		for si, n := range c.ProvisionStates {
			if n == 0 {
				continue
			}
			state := topology.ProvisionStateOther
			if si < len(topology.ProvisionStates) {
				state = topology.ProvisionStates[si]
			}
			ch <- prometheus.MustNewConstMetric(conductorProvisionDesc, prometheus.GaugeValue, float64(n),
				c.Hostname, c.ConductorGroup, state)
		}
		ch <- prometheus.MustNewConstMetric(conductorMaintenanceDesc, prometheus.GaugeValue, float64(c.Maintenance), labels...)
		ch <- prometheus.MustNewConstMetric(conductorAffinityElsewhereDesc, prometheus.GaugeValue,
			float64(c.AffinityElsewhere), labels...)
		ch <- prometheus.MustNewConstMetric(conductorPreparedDesc, prometheus.GaugeValue, float64(len(c.Prepared)), labels...)
	}
	for k, n := range t.AffinityUnavailable {
		ch <- prometheus.MustNewConstMetric(affinityUnavailableDesc, prometheus.GaugeValue, float64(n),
			k.ConductorGroup, k.Affinity.String())
	}
	for k, n := range t.Stuck {
		ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, float64(n),
			k.ConductorGroup, k.ProvisionState, k.Reason.String())
	}
	for _, h := range slices.Sorted(maps.Keys(t.Reservations)) {
		ch <- prometheus.MustNewConstMetric(reservedNodesDesc, prometheus.GaugeValue, float64(t.Reservations[h]), h)
	}
	for i := range t.Rings {
		r := &t.Rings[i]
		ch <- prometheus.MustNewConstMetric(ringConductorsDesc, prometheus.GaugeValue,
			float64(len(r.Ring.Hosts())), r.ConductorGroup, r.HardwareType)
		ch <- prometheus.MustNewConstMetric(ringNodesDesc, prometheus.GaugeValue,
			float64(r.Nodes), r.ConductorGroup, r.HardwareType)
	}
	for _, k := range slices.SortedFunc(maps.Keys(t.Orphans), func(a, b topology.GroupDriver) int {
		return cmp.Or(strings.Compare(a.ConductorGroup, b.ConductorGroup), strings.Compare(a.Driver, b.Driver))
	}) {
		ch <- prometheus.MustNewConstMetric(nodesWithoutConductorDesc, prometheus.GaugeValue,
			float64(t.Orphans[k]), k.ConductorGroup, k.Driver)
	}
	ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(len(t.Nodes)))
	if opts.NodeInfo {
		collectNodeInfo(ch, t)
	}
}

// collectNodeInfo emits ironic_node_conductor_info, presorted so that the
// registry's sort of it runs in linear time.
func collectNodeInfo(ch chan<- prometheus.Metric, t *topology.Topology) {
	for _, i := range nodeInfoOrder(t) {
		n := &t.Nodes[i]
		ch <- prometheus.MustNewConstMetric(nodeInfoDesc, prometheus.GaugeValue, 1,
			n.UUID, n.NameOrEmpty(), n.ConductorGroup, n.Driver, n.Conductor)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
