// Package collector renders the cached Ironic topology (package topology)
// as Prometheus metrics: the /metrics handler, and the cache's refresh
// metrics. It computes nothing of Ironic's: every value comes from the
// Topology. It declares the families; writing the text format fast is
// package internal/exposition's job.
package collector

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

const namespace = "ironic"

var (
	hostLabels = []string{"conductor_group", "hostname"} // label names are in name order

	upFamily = newFamily("ironic_up",
		"1 when the latest refresh from Ironic's database worked, 0 otherwise.")
	conductorAliveFamily = newFamily("ironic_conductor_alive",
		"Ironic's API 'alive' for the conductor: its heartbeat is not older than heartbeat_timeout (1) or is (0).",
		hostLabels...)
	conductorOnlineFamily = newFamily("ironic_conductor_online",
		"The conductor's online column: 1 while registered, 0 after a clean stop.", hostLabels...)
	conductorStateFamily = newFamily("ironic_conductor_state",
		"1 for the conductor's current state (alive, draining, stopped, dead), 0 for the others.",
		"conductor_group", "hostname", "state")
	conductorHeartbeatFamily = newFamily("ironic_conductor_heartbeat_timestamp_seconds",
		"The conductor's last heartbeat (updated_at) as a Unix timestamp.", hostLabels...)
	conductorRowDeletionFamily = newFamily("ironic_conductor_row_deletion_timestamp_seconds",
		"From when Ironic's stale conductor cleanup (32.0+, every [conductor]conductor_cleanup_interval) deletes the conductor's row; a time in the past: at its next run. Ironic deletes rows only on SQLite (any offline row): elsewhere its cleanup fails at every run and the series is absent.",
		hostLabels...)
	conductorRingMemberFamily = newFamily("ironic_conductor_hash_ring_member",
		"1 when the conductor is a member of its hash rings (online with a heartbeat Ironic accepts), 0 otherwise.",
		hostLabels...)
	conductorHardwareTypeFamily = newFamily("ironic_conductor_hardware_type_info",
		"1 for each hardware type the conductor registered.",
		"conductor_group", "hardware_type", "hostname")
	conductorNodesFamily = newFamily("ironic_conductor_nodes",
		"Nodes the hash rings map to this conductor now.", hostLabels...)
	reservedNodesFamily = newFamily("ironic_conductor_reserved_nodes",
		"Nodes whose reservation (lock) Ironic attributes to this conductor (a HOST:PORT conductor locks as HOST), or that name this host when no conductor has it.",
		"hostname")
	nodeInfoFamily = newFamily(nodeInfoName, nodeInfoHelp,
		"conductor", "conductor_group", "driver", "node_name", "node_uuid")
	ringConductorsFamily = newFamily("ironic_hash_ring_conductors",
		"Active conductors in the hash ring of a conductor group and hardware type.",
		"conductor_group", "hardware_type")
	ringNodesFamily = newFamily("ironic_hash_ring_nodes",
		"Nodes served by the hash ring of a conductor group and hardware type.",
		"conductor_group", "hardware_type")
	nodesWithoutConductorFamily = newFamily("ironic_nodes_without_conductor",
		"Nodes that no hash ring can serve, by conductor group and driver.",
		"conductor_group", "driver")
	nodesFamily = newFamily("ironic_nodes",
		"Nodes in Ironic's database.")
	changesFamily = newFamily("ironic_node_conductor_changes_total",
		"Nodes whose conductor changed between two refreshes since the exporter started (ring churn).",
		"conductor_group")
	conductorProvisionFamily = newFamily("ironic_conductor_provision_state_nodes",
		"Nodes the hash rings map to this conductor, by provision state (Ironic's state names; 'other' for any other value). Zero counts are not exported.",
		"conductor_group", "hostname", "provision_state")
	conductorMaintenanceFamily = newFamily("ironic_conductor_maintenance_nodes",
		"Nodes the hash rings map to this conductor that are in maintenance.", hostLabels...)
	conductorAffinityElsewhereFamily = newFamily("ironic_conductor_affinity_elsewhere_nodes",
		"Nodes the hash rings map to this conductor whose boot environment (conductor_affinity) another conductor prepared.",
		hostLabels...)
	conductorPreparedFamily = newFamily("ironic_conductor_prepared_nodes",
		"Nodes whose conductor_affinity is this conductor: it prepared, and holds, their boot environment.", hostLabels...)
	affinityUnavailableFamily = newFamily("ironic_nodes_affinity_unavailable",
		"Deployed, rescued, held or in-progress nodes whose boot environment was prepared by a conductor that is not running (affinity=not_alive) or no longer exists (affinity=missing).",
		"affinity", "conductor_group")
	stuckFamily = newFamily("ironic_nodes_stuck",
		"Nodes in a state a conductor works or waits in whose lock holder is not running (reason=lock_holder_not_alive), locked by a HOST:PORT conductor that is not running, which Ironic never releases (lock_never_released), that no ring serves (no_conductor), whose ring conductor is not running (conductor_not_alive), or in a step state with no lock and no worker (no_lock_no_worker).",
		"conductor_group", "provision_state", "reason")
	faultedFamily = newFamily("ironic_nodes_faulted",
		"Nodes Ironic put in maintenance itself (nodes.fault: power failure, clean failure, rescue abort failure, service failure; 'other' for any other value), by conductor group and ring conductor ('' when none).",
		"conductor", "conductor_group", "fault")
	healthFamily = newFamily("ironic_nodes_health",
		"Nodes by the hardware health their BMC reported at the last power sync (nodes.health, Ironic 34.0+: OK, Warning, Critical; 'other' for any other value), by conductor group and ring conductor ('' when none).",
		"conductor", "conductor_group", "health")
	historyErrorsFamily = newFamily("ironic_conductor_history_errors",
		"ERROR events the conductor recorded in node_history (Ironic 18.2+) within the last --ironic.history-window, by the conductor name the events carry; every registered conductor has a series, 0 when it recorded none.",
		"hostname")
	unregisteredFamily = newFamily("ironic_nodes_driver_unregistered",
		"Nodes without a conductor whose hardware type no conductor registers in any group, alive or not: removed from Ironic by the release the rules follow (reason=removed_from_ironic: oneview 12.0, xclarity and ibmc 26.0, ilo, ilo5, irmc and snmp 36.0) or enabled on no conductor (not_enabled).",
		"driver", "reason")
	concurrentActionsFamily = newFamily("ironic_concurrent_actions",
		"Nodes in the provision states Ironic's concurrency limit of the action counts (deploy: deploying, wait call-back; clean: deleting, cleaning, clean wait), by conductor group; from Ironic 21.1.",
		"action", "conductor_group")
	concurrentActionLimitFamily = newFamily("ironic_concurrent_action_limit",
		"Ironic's limit of the action ([conductor]max_concurrent_deploy, max_concurrent_clean), over every node (scope=global) or each conductor group's (scope=conductor_group, max_concurrent_per_conductor_group, 35.0+).",
		"action", "scope")
	concurrentActionHeadroomFamily = newFamily("ironic_concurrent_action_headroom",
		"How many more of the action Ironic accepts for the group's nodes now: its limit less the nodes its conductors count; 0 or less: Ironic refuses new ones (ConcurrentActionLimit).",
		"action", "conductor_group")
	lastSuccessFamily = newFamily("ironic_exporter_last_refresh_success_timestamp_seconds",
		"When the served topology was read from the database, as a Unix timestamp.")
	dataAgeFamily = newFamily("ironic_exporter_data_age_seconds",
		"Age of the served topology; grows while the database cannot be read.")
	ironicInfoFamily = newFamily("ironic_exporter_ironic_info",
		"The Ironic release whose rules the topology follows, the schema revision and what told the release (alembic_version, conductors.version, flag, none).",
		"backend", "detected_from", "release", "schema_revision")
	ringSettingsFamily = newFamily("ironic_exporter_hash_ring_info",
		"The hash ring settings in effect: hash_ring_algorithm as Ironic's release applies it (md5 before 15.2).",
		"hash_ring_algorithm")
	heartbeatTimeoutFamily = newFamily("ironic_exporter_heartbeat_timeout_seconds",
		"The [conductor]heartbeat_timeout liveness and rings are judged with.")
	partitionExponentFamily = newFamily("ironic_exporter_hash_partition_exponent",
		"The [DEFAULT]hash_partition_exponent the rings are built with.")
	inexactFamily = newFamily("ironic_exporter_inexact_reasons",
		"Reasons the answers may not be Ironic's (unknown revision, mid-upgrade fleet, replicas above 1 before 12.2, ...); 0 when exact. The log says which.")
)

// ExporterOptions tunes what the exporter renders.
type ExporterOptions struct {
	// NodeInfo enables the families with a series per node:
	// ironic_node_conductor_info and, with Nova, ironic_node_nova_compute_info.
	// Turn it off on very large fleets to save series.
	NodeInfo bool
}

// family is one metric family of a view: its Desc for client_golang's
// registry (the protobuf exposition) and what the text writer
// (exposition.Families) needs to write it without one.
type family struct {
	exposition.Family
	desc *prometheus.Desc
}

// families are every family newFamily made, for Describe.
var families []*family

// newFamily declares a family: a counter when its name ends in _total (the
// naming convention), a gauge otherwise. Its label names must be in name
// order: the exposition's, so that the text writer writes and sorts label
// values in the order emit gives them.
func newFamily(name, help string, labels ...string) *family {
	f := makeFamily(name, help, labels...)
	families = append(families, f)
	return f
}

// makeFamily is newFamily without declaring the family among the view's
// (Nova's families are the NovaCollector's).
func makeFamily(name, help string, labels ...string) *family {
	if !slices.IsSorted(labels) {
		panic("collector: labels of " + name + " not in name order")
	}
	f := &family{Family: exposition.Family{Name: name, Help: help, Labels: labels, Type: prometheus.GaugeValue},
		desc: prometheus.NewDesc(name, help, labels, nil)}
	if strings.HasSuffix(name, "_total") {
		f.Type = prometheus.CounterValue
	}
	return f
}

// emitFunc receives one series of a family: its value and its label
// values, in the order of its label names. It may keep labels.
type emitFunc func(f *family, v float64, labels ...string)

// textEmit emits into tf, for the text exposition.
func textEmit(tf exposition.Families) emitFunc {
	return func(f *family, v float64, labels ...string) { tf.Add(&f.Family, v, labels...) }
}

// viewCollector renders a view already taken from the cache, for a
// registry: the protobuf exposition, and the reference the text writer is
// tested against.
type viewCollector struct {
	view topology.View
	now  time.Time
	opts ExporterOptions
}

var _ prometheus.Collector = viewCollector{}

// Describe implements prometheus.Collector.
func (c viewCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range families {
		ch <- f.desc
	}
}

// Collect implements prometheus.Collector.
func (c viewCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(f *family, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(f.desc, f.Type, v, labels...)
	}
	collectShared(emit, c.view)
	collectPerScrape(emit, c.view, c.now)
	if c.opts.NodeInfo && c.view.Topology != nil {
		collectNodeInfo(emit, c.view.Topology)
	}
}

// collectShared emits the families of v that its scrapes share: all but
// those of collectPerScrape and the node family, which the text exposition
// writes its own way (nodetext.go).
func collectShared(emit emitFunc, v topology.View) {
	emit(upFamily, boolValue(v.Up()))
	for g, n := range v.Remapped {
		emit(changesFamily, n, g)
	}
	t := v.Topology
	if t == nil {
		return
	}
	emit(lastSuccessFamily, unixSeconds(v.LastSuccess))
	collectTopology(emit, t)
}

// collectPerScrape emits the families of v whose value depends on the
// scrape's clock, not only on v.
func collectPerScrape(emit emitFunc, v topology.View, now time.Time) {
	if v.Topology != nil {
		emit(dataAgeFamily, now.Sub(v.LastSuccess).Seconds())
	}
}

func collectTopology(emit emitFunc, t *topology.Topology) {
	d, r := t.Detection, t.Rules
	emit(ironicInfoFamily, 1, r.Backend().String(), d.From, d.Release.String(), d.SchemaRevision)
	emit(ringSettingsFamily, 1, string(r.EffectiveAlgorithm()))
	emit(heartbeatTimeoutFamily, r.Settings().HeartbeatTimeout.Seconds())
	emit(partitionExponentFamily, float64(r.PartitionExponent()))
	emit(inexactFamily, float64(len(d.Warnings)+len(r.Exact())))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		group, host := c.ConductorGroup, c.Hostname
		emit(conductorAliveFamily, boolValue(c.Alive), group, host)
		emit(conductorOnlineFamily, boolValue(c.Online), group, host)
		emit(conductorRingMemberFamily, boolValue(c.Active), group, host)
		for _, s := range r.States() {
			emit(conductorStateFamily, boolValue(c.State == s), group, host, string(s))
		}
		if !c.UpdatedAt.IsZero() && t.Heartbeats {
			emit(conductorHeartbeatFamily, unixSeconds(c.UpdatedAt), group, host)
		}
		if due, ok := t.Rules.RowDeletion(c.Online, c.UpdatedAt); ok {
			emit(conductorRowDeletionFamily, max(unixSeconds(due), 0), group, host)
		}
		for _, hw := range c.HardwareTypes {
			emit(conductorHardwareTypeFamily, 1, group, hw, host)
		}
		emit(conductorNodesFamily, float64(len(c.Nodes)), group, host)
		for si, n := range c.ProvisionStates {
			if n == 0 {
				continue
			}
			state := topology.ProvisionStateOther
			if si < len(topology.ProvisionStates) {
				state = topology.ProvisionStates[si]
			}
			emit(conductorProvisionFamily, float64(n), group, host, state)
		}
		emit(conductorMaintenanceFamily, float64(c.Maintenance), group, host)
		emit(conductorAffinityElsewhereFamily, float64(c.AffinityElsewhere), group, host)
		emit(conductorPreparedFamily, float64(len(c.Prepared)), group, host)
	}
	for k, n := range t.AffinityUnavailable {
		emit(affinityUnavailableFamily, float64(n), k.Affinity.String(), k.ConductorGroup)
	}
	for k, n := range t.Stuck {
		emit(stuckFamily, float64(n), k.ConductorGroup, k.ProvisionState, k.Reason.String())
	}
	for h, n := range t.Reservations {
		emit(reservedNodesFamily, float64(n), h)
	}
	for i := range t.Rings {
		r := &t.Rings[i]
		emit(ringConductorsFamily, float64(len(r.Ring.Hosts())), r.ConductorGroup, r.HardwareType)
		emit(ringNodesFamily, float64(r.Nodes), r.ConductorGroup, r.HardwareType)
	}
	for k, n := range t.Orphans {
		emit(nodesWithoutConductorFamily, float64(n), k.ConductorGroup, k.Driver)
	}
	emit(nodesFamily, float64(len(t.Nodes)))
	for k, n := range t.Faults {
		emit(faultedFamily, float64(n), k.Conductor, k.ConductorGroup, k.Fault)
	}
	for k, n := range t.Health {
		emit(healthFamily, float64(n), k.Conductor, k.ConductorGroup, k.Fault)
	}
	for driver, n := range t.Unregistered() {
		reason := "not_enabled"
		if _, removed := t.Rules.HardwareTypeRemoved(driver); removed {
			reason = "removed_from_ironic"
		}
		emit(unregisteredFamily, float64(n), driver, reason)
	}
	collectConcurrency(emit, t)
	collectHistory(emit, t)
}

// collectHistory emits the window's ERROR events by conductor: every
// conductor of the topology (0 when it recorded none, so that an alert on
// an increase sees its start) and any other name the events carry. Nothing
// when no node_history is read.
func collectHistory(emit emitFunc, t *topology.Topology) {
	if t.History == nil {
		return
	}
	errs := t.History.ErrorsByConductor()
	for i := range t.Conductors {
		h := t.Conductors[i].Hostname
		emit(historyErrorsFamily, float64(errs[h].N), h)
		delete(errs, h)
	}
	for h, e := range errs {
		emit(historyErrorsFamily, float64(e.N), h)
	}
}

// collectConcurrency emits where each conductor group stands against
// Ironic's concurrency limits (nothing before 21.1).
func collectConcurrency(emit emitFunc, t *topology.Topology) {
	limits, ok := t.Rules.ConcurrencyLimits()
	if !ok {
		return
	}
	scope := "global"
	if limits.PerGroup {
		scope = "conductor_group"
	}
	for _, a := range rules.Actions {
		emit(concurrentActionLimitFamily, float64(limits.Limit(a)), a.String(), scope)
	}
	for _, c := range t.Concurrency() {
		emit(concurrentActionsFamily, float64(c.InFlight), c.Action.String(), c.ConductorGroup)
		emit(concurrentActionHeadroomFamily, float64(c.Headroom()), c.Action.String(), c.ConductorGroup)
	}
}

// collectNodeInfo emits ironic_node_conductor_info, presorted so that the
// registry's sort of it runs in linear time.
func collectNodeInfo(emit emitFunc, t *topology.Topology) {
	for _, i := range nodeInfoOrder(t) {
		n := &t.Nodes[i]
		emit(nodeInfoFamily, 1, n.Conductor, n.ConductorGroup, n.Driver, n.NameOrEmpty(), n.UUID)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
