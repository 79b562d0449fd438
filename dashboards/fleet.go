package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// defaultGroup names Ironic's default conductor group (the empty string,
// which Prometheus shows as a missing label) "(default)" for display.
func defaultGroup(expr string) string {
	return `label_replace(` + expr + `, "conductor_group", "(default)", "conductor_group", "")`
}

// zeroWhenUp turns "no series" into 0 while the exporter answers, so that
// a stat shows 0 rather than "No data" when there is nothing to count,
// and still shows "No data" when the exporter is not scraped.
func zeroWhenUp(expr string) string {
	return expr + "\nor on () (0 * max(" + sel("ironic_up") + "))"
}

// running selects the conductors that are running (alive or draining,
// topology's ConductorInfo.Running): the holders whose locks are their own.
// Ironic's _check_orphan_nodes releases the locks of the hosts
// get_offline_conductors returns (a stale heartbeat; on SQLite from 22.1,
// commit 0099d1812, online=false); a draining conductor is not among them,
// and on SQLite 22.1+ `alive` is 0 for conductors that work, so `alive`
// cannot tell a stuck lock.
const running = `state=~"alive|draining"`

// stuckReservations are the reserved-node counts of hosts that are not a
// running conductor: a dead, stopped or unknown host holds the lock, and
// Ironic only clears it when a conductor of that name starts again.
var stuckReservations = "max by (hostname) (" + sel("ironic_conductor_reserved_nodes") + ")\n" +
	"unless on (hostname) (max by (hostname) (" + sel("ironic_conductor_state", running) + ") == 1)"

// ringMembersNodes is the node count of each hash ring member.
var ringMembersNodes = "max by (hostname, conductor_group) (" + sel("ironic_conductor_nodes") + ")\n" +
	"and on (hostname, conductor_group) (max by (hostname, conductor_group) (" + sel("ironic_conductor_hash_ring_member") + ") == 1)"

// busiestVsFairShare is, per ring (conductor group and hardware type), the
// node count of its busiest conductor over the ring's fair share (nodes /
// conductors): 1 is perfect balance. It counts ironic_node_conductor_info,
// so it is an instant query (one sample per node) and needs
// --collector.node-info.
var busiestVsFairShare = "max by (conductor_group, hardware_type) (\n" +
	"  label_replace(\n" +
	"    count by (conductor_group, driver, conductor) (\n" +
	"      max by (node_uuid, conductor_group, driver, conductor) (" + sel("ironic_node_conductor_info", `conductor!=""`) + ")\n" +
	"    ),\n" +
	`    "hardware_type", "$1", "driver", "(.*)"` + "\n" +
	"  )\n" +
	")\n" +
	"/ on (conductor_group, hardware_type) (\n" +
	"  max by (conductor_group, hardware_type) (" + sel("ironic_hash_ring_nodes") + ")\n" +
	"  / max by (conductor_group, hardware_type) (" + sel("ironic_hash_ring_conductors") + ")\n" +
	")"

// Fleet is the overview of every conductor the chosen exporters see.
func Fleet() (dashboard.Dashboard, error) {
	b := newDashboard("Ironic conductors / Fleet", FleetUID,
		"Liveness of OpenStack Ironic's conductors and how Ironic's hash rings spread the nodes over them, "+
			"from ironic-conductor-exporter.")

	// Overview.
	b = b.WithRow(dashboard.NewRowBuilder("Overview")).
		WithPanel(newThresholdStat(green).
			Title("Conductors by state").
			Description("Conductors in each state, as ironic_conductor_state reports it: alive (online, fresh heartbeat), "+
				"draining (offline, fresh heartbeat: unregistered less than heartbeat_timeout ago, or still draining on 23.1-31.x), "+
				"stopped (offline, stale: a clean stop) and dead (online but stale: crashed, hung or stopped without unregistering). "+
				"Draining and dead conductors turn the tile yellow and red.").
			WithTarget(statQuery("A", "sum by (state) (max by (hostname, conductor_group, state) ("+sel("ironic_conductor_state")+"))", "{{state}}")).
			Decimals(0).
			OverrideByName("alive", []dashboard.DynamicConfigValue{propColor(green)}).
			OverrideByName("draining", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, yellow})}).
			OverrideByName("stopped", []dashboard.DynamicConfigValue{propColor(blue)}).
			OverrideByName("dead", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, red})}).
			TextMode(common.BigValueTextModeValueAndName).
			GridPos(gridPos(8, 5))).
		WithPanel(newCountStat().
			Title("Nodes").
			Description("Nodes in Ironic's database (ironic_nodes).").
			WithTarget(query("A", "max("+sel("ironic_nodes")+")", "nodes")).
			Decimals(0).
			GridPos(gridPos(4, 5))).
		WithPanel(newThresholdStat(green, step{1, red}).
			Title("Nodes without conductor").
			Description("Nodes no hash ring can serve: no alive conductor of the node's conductor group registered its " +
				"driver (hardware type). Ironic cannot manage them until one does. Any is red.").
			WithTarget(statQuery("A", zeroWhenUp("sum(max by (conductor_group, driver) ("+sel("ironic_nodes_without_conductor")+"))"), "nodes")).
			Decimals(0).
			GridPos(gridPos(4, 5))).
		WithPanel(newThresholdStat(green, step{1, red}).
			Title("Stuck reservations").
			Description("Nodes locked (reservation) by a host that is not a running (alive or draining) conductor: a dead, stopped or unknown " +
				"conductor holds the lock, and the nodes stay locked until a conductor of that name starts again or " +
				"an operator clears them. Any is red.").
			WithTarget(statQuery("A", zeroWhenUp("sum(\n"+stuckReservations+"\n)"), "nodes")).
			Decimals(0).
			GridPos(gridPos(4, 5))).
		WithPanel(newThresholdStat(red, step{1, green}).
			Title("Database reads").
			Description("Whether the latest refresh from Ironic's database worked on every selected exporter " +
				"(the minimum of ironic_up). When it is down the exporters keep serving the last topology they read; " +
				"see the Exporter row for how old it is.").
			WithTarget(statQuery("A", "min("+sel("ironic_up")+")", "")).
			Mappings(valueMappings(mapping{"0", "Failing", red}, mapping{"1", "OK", green})).
			GridPos(gridPos(4, 5)))

	// Conductors.
	b = b.WithRow(dashboard.NewRowBuilder("Conductors")).
		WithPanel(newTable().
			Title("Conductors").
			Description("Every conductor: its state, the age of its last heartbeat, the nodes the hash rings map to it and "+
				"the nodes it holds locked. Click a hostname for its own dashboard.").
			WithTarget(instant("A", defaultGroup(stateNumber(" by (hostname, conductor_group) ")))).
			WithTarget(instant("B", defaultGroup("time() - max by (hostname, conductor_group) ("+sel("ironic_conductor_heartbeat_timestamp_seconds")+")"))).
			WithTarget(instant("C", defaultGroup("max by (hostname, conductor_group) ("+sel("ironic_conductor_nodes")+")"))).
			WithTarget(instant("D", defaultGroup(
				"(\n  0 * max by (hostname, conductor_group) ("+sel("ironic_conductor_online")+")\n"+
					"  + on (hostname) group_left () max by (hostname) ("+sel("ironic_conductor_reserved_nodes")+")\n)\n"+
					"or 0 * max by (hostname, conductor_group) ("+sel("ironic_conductor_online")+")"))).
			WithTransformation(merge()).
			WithTransformation(organize([]string{"Time"},
				[]string{"hostname", "conductor_group", "Value #A", "Value #B", "Value #C", "Value #D"},
				map[string]string{
					"hostname": "Hostname", "conductor_group": "Group", "Value #A": "State",
					"Value #B": "Heartbeat age", "Value #C": "Nodes", "Value #D": "Reserved nodes",
				})).
			Decimals(0).
			Filterable(true).
			SortBy(tableSort("Hostname", false)).
			OverrideByName("Hostname", []dashboard.DynamicConfigValue{propLink("Conductor ${__value.raw}", conductorURL("${__value.raw}"))}).
			OverrideByName("State", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueMappings(states...)}, propCellBackground()}).
			OverrideByName("Heartbeat age", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}, propThresholdColor(), propThresholds(green, heartbeatSteps...), propCellBackground()}).
			GridPos(gridPos(24, 10))).
		WithPanel(newTable().
			Title("Conductors by group and state").
			Description("Conductors of each conductor group in each state. A group with no alive conductor cannot serve "+
				"its nodes.").
			WithTarget(instant("A", defaultGroup("sum by (conductor_group, state) (max by (hostname, conductor_group, state) ("+sel("ironic_conductor_state")+"))"))).
			WithTransformation(dashboard.DataTransformerConfig{Id: "groupingToMatrix", Options: map[string]any{
				"columnField": "state", "rowField": "conductor_group", "valueField": "Value", "emptyValue": "zero",
			}}).
			Decimals(0).
			OverrideByName("dead", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, red}), propCellBackground()}).
			OverrideByName("alive", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(red, step{1, green}), propCellBackground()}).
			GridPos(gridPos(8, 8))).
		WithPanel(newTimeseries().
			Title("Conductors by state over time").
			Description("Conductors in each state over time (ironic_conductor_state).").
			WithTarget(query("A", "sum by (state) (max by (hostname, conductor_group, state) ("+sel("ironic_conductor_state")+"))", "{{state}}")).
			Decimals(0).
			Overrides(stateOverrides()).
			Legend(legendList()).
			GridPos(gridPos(16, 8))).
		WithPanel(newTimeseries().
			Title("Heartbeat age").
			Description("Seconds since each conductor's last heartbeat (time() - ironic_conductor_heartbeat_timestamp_seconds), "+
				"cleanly stopped conductors left out. Ironic heartbeats every 10 s by default and drops a conductor "+
				"from its rings after heartbeat_timeout (60 s by default): yellow from 30 s, red from 60 s.").
			WithTarget(query("A", "time() - max by (hostname, conductor_group) ("+sel("ironic_conductor_heartbeat_timestamp_seconds")+")\n"+
				"unless on (hostname, conductor_group) (max by (hostname, conductor_group) ("+sel("ironic_conductor_state", `state="stopped"`)+") == 1)",
				"{{hostname}}")).
			Unit("s").
			Thresholds(thresholds(green, heartbeatSteps...)).
			ThresholdsStyle(dashedThresholds()).
			OverrideByFieldType("number", []dashboard.DynamicConfigValue{seriesLink()}).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTimeseries().
			Title("Nodes per conductor").
			Description("Nodes the hash rings map to each conductor now (ironic_conductor_nodes). A conductor that is not "+
				"a ring member has none; when one leaves or joins, its nodes move to or from the others.").
			WithTarget(query("A", "max by (hostname, conductor_group) ("+sel("ironic_conductor_nodes")+")", "{{hostname}}")).
			Decimals(0).
			OverrideByFieldType("number", []dashboard.DynamicConfigValue{seriesLink()}).
			Legend(legendTable()).
			GridPos(gridPos(12, 8)))

	// Hash rings.
	b = b.WithRow(dashboard.NewRowBuilder("Hash rings")).
		WithPanel(newTable().
			Title("Hash rings").
			Description("Ironic's hash rings, one per conductor group and hardware type: their active conductors, the "+
				"nodes they serve, and the busiest conductor's nodes over the ring's fair share (nodes / conductors; 1 is "+
				"perfect balance, yellow from 1.5, red from 2). A ring with one conductor has no failover (yellow). "+
				"The balance column counts ironic_node_conductor_info, so it is empty with --no-collector.node-info.").
			WithTarget(instant("A", defaultGroup("max by (conductor_group, hardware_type) ("+sel("ironic_hash_ring_conductors")+")"))).
			WithTarget(instant("B", defaultGroup("max by (conductor_group, hardware_type) ("+sel("ironic_hash_ring_nodes")+")"))).
			WithTarget(instant("C", defaultGroup(busiestVsFairShare))).
			WithTransformation(merge()).
			WithTransformation(organize([]string{"Time"},
				[]string{"conductor_group", "hardware_type", "Value #A", "Value #B", "Value #C"},
				map[string]string{
					"conductor_group": "Group", "hardware_type": "Hardware type", "Value #A": "Conductors",
					"Value #B": "Nodes", "Value #C": "Busiest / fair share",
				})).
			Decimals(0).
			SortBy(tableSort("Busiest / fair share", true)).
			OverrideByName("Conductors", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(red, step{1, yellow}, step{2, green}), propCellBackground()}).
			OverrideByName("Busiest / fair share", []dashboard.DynamicConfigValue{
				{Id: "decimals", Value: 2}, propThresholdColor(), propThresholds(green, step{1.5, yellow}, step{2, red}), propCellBackground(),
			}).
			GridPos(gridPos(12, 8))).
		WithPanel(newTimeseries().
			Title("Ring balance: spread of nodes per conductor").
			Description("Per conductor group, the standard deviation of the nodes per ring member over their mean " +
				"(coefficient of variation of ironic_conductor_nodes over hash ring members). 0 is perfect balance; with " +
				"Ironic's default 32 partitions per host some spread is normal on small fleets: yellow from 25 %, red " +
				"from 50 %. Members serving different hardware types are compared as if they served the same ring.").
			WithTarget(query("A", defaultGroup(
				"stddev by (conductor_group) (\n"+ringMembersNodes+"\n)\n/ avg by (conductor_group) (\n"+ringMembersNodes+"\n)"),
				"{{conductor_group}}")).
			Unit("percentunit").
			Thresholds(thresholds(green, step{0.25, yellow}, step{0.5, red})).
			ThresholdsStyle(dashedThresholds()).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTimeseries().
			Title("Ring churn").
			Description("Nodes whose conductor changed, per conductor group, in each $__rate_interval window " +
				"(increase of ironic_node_conductor_changes_total). Spikes follow conductors joining or leaving a ring; " +
				"steady churn means conductors flapping.").
			WithTarget(query("A", defaultGroup("max by (conductor_group) (increase("+sel("ironic_node_conductor_changes_total")+"[$__rate_interval]))"), "{{conductor_group}}")).
			DrawStyle(common.GraphDrawStyleBars).
			FillOpacity(60).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTimeseries().
			Title("Nodes without conductor by group and driver").
			Description("Nodes no hash ring can serve, by conductor group and driver (ironic_nodes_without_conductor): no " +
				"alive conductor of that group registered that hardware type.").
			WithTarget(query("A", defaultGroup("max by (conductor_group, driver) ("+sel("ironic_nodes_without_conductor")+")"), "{{conductor_group}}:{{driver}}")).
			Decimals(0).
			ColorScheme(fixedColor(red)).
			Thresholds(thresholds(green, step{1, red})).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTimeseries().
			Title("Concurrency headroom").
			Description("How many more deploys (action=deploy) or tear-downs and cleanings (clean) Ironic accepts for each " +
				"conductor group's nodes (ironic_concurrent_action_headroom): [conductor]max_concurrent_deploy or " +
				"max_concurrent_clean less the nodes Ironic counts against it, over every node or, with " +
				"max_concurrent_per_conductor_group (35.0+), the group's. At 0 Ironic refuses new ones. Empty before Ironic 21.1.").
			WithTarget(query("A", defaultGroup("min by (action, conductor_group) ("+sel("ironic_concurrent_action_headroom")+")"), "{{action}} {{conductor_group}}")).
			Decimals(0).
			Thresholds(thresholds(red, step{1, green})).
			ThresholdsStyle(dashedThresholds()).
			Legend(legendTable()).
			GridPos(gridPos(12, 8)))

	// Reservations.
	b = b.WithRow(dashboard.NewRowBuilder("Reservations")).
		WithPanel(newTimeseries().
			Title("Reserved nodes by host").
			Description("Nodes whose reservation (lock) names each host (ironic_conductor_reserved_nodes). Locks come and go "+
				"with every operation; a count that stays up on a host that is not running (alive or draining) is a stuck lock.").
			WithTarget(query("A", "max by (hostname) ("+sel("ironic_conductor_reserved_nodes")+")", "{{hostname}}")).
			Decimals(0).
			OverrideByFieldType("number", []dashboard.DynamicConfigValue{seriesLink()}).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTable().
			Title("Hosts holding stuck reservations").
			Description("Hosts that hold node locks but are not a running conductor (dead, stopped, or no conductor "+
				"of that name at all; a draining conductor still owns its locks), with the nodes each holds. Ironic releases such locks "+
				"when a conductor of that name starts again; otherwise clear them by hand.").
			WithTarget(instant("A", stuckReservations)).
			WithTransformation(organize([]string{"Time"}, []string{"hostname", "Value"},
				map[string]string{"hostname": "Hostname", "Value": "Locked nodes"})).
			Decimals(0).
			NoValue("No stuck reservations").
			OverrideByName("Locked nodes", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, red}), propCellBackground()}).
			OverrideByName("Hostname", []dashboard.DynamicConfigValue{propLink("Conductor ${__value.raw}", conductorURL("${__value.raw}"))}).
			GridPos(gridPos(12, 8)))

	b = novaRow(b)

	// Exporter.
	b = b.WithRow(dashboard.NewRowBuilder("Exporter")).
		WithPanel(newThresholdStat(red, step{1, green}).
			Title("Database reads by exporter").
			Description("ironic_up of each exporter: whether its latest refresh from Ironic's database worked.").
			WithTarget(statQuery("A", "max by (instance) ("+sel("ironic_up")+")", "{{instance}}")).
			Mappings(valueMappings(mapping{"0", "Failing", red}, mapping{"1", "OK", green})).
			TextMode(common.BigValueTextModeValueAndName).
			GridPos(gridPos(6, 7))).
		WithPanel(newTimeseries().
			Title("Data age").
			Description("Age of the topology each exporter serves (ironic_exporter_data_age_seconds). It stays below " +
				"--refresh.min-interval plus the scrape interval while the database answers and grows while it does not: " +
				"yellow from 1 min, red from 5 min.").
			WithTarget(query("A", "max by (instance) ("+sel("ironic_exporter_data_age_seconds")+")", "{{instance}}")).
			Unit("s").
			Thresholds(thresholds(green, step{60, yellow}, step{300, red})).
			ThresholdsStyle(dashedThresholds()).
			Legend(legendList()).
			GridPos(gridPos(6, 7))).
		WithPanel(newTimeseries().
			Title("Refresh duration").
			Description("Time to read Ironic's database and rebuild the topology (ironic_exporter_refresh_duration_seconds): " +
				"the 99th percentile and the mean per exporter. A refresh is cut at --refresh.timeout (30 s by default): " +
				"yellow from 5 s, red from 20 s.").
			WithTarget(query("A", "histogram_quantile(0.99, sum by (instance, le) (rate("+sel("ironic_exporter_refresh_duration_seconds_bucket")+"[$__rate_interval])))", "p99 {{instance}}")).
			WithTarget(query("B", "sum by (instance) (rate("+sel("ironic_exporter_refresh_duration_seconds_sum")+"[$__rate_interval]))\n"+
				"/ sum by (instance) (rate("+sel("ironic_exporter_refresh_duration_seconds_count")+"[$__rate_interval]))", "mean {{instance}}")).
			Unit("s").
			Thresholds(thresholds(green, step{5, yellow}, step{20, red})).
			ThresholdsStyle(dashedThresholds()).
			Legend(legendList()).
			GridPos(gridPos(6, 7))).
		WithPanel(newTimeseries().
			Title("Refreshes and errors").
			Description("Refreshes from the database per second (ironic_exporter_refresh_duration_seconds_count) and failed "+
				"ones (ironic_exporter_refresh_errors_total), per exporter. Any error rate is red: the exporter then "+
				"serves its last good topology.").
			WithTarget(query("A", "sum by (instance) (rate("+sel("ironic_exporter_refresh_duration_seconds_count")+"[$__rate_interval]))", "refreshes {{instance}}")).
			WithTarget(query("B", "sum by (instance) (rate("+sel("ironic_exporter_refresh_errors_total")+"[$__rate_interval]))", "errors {{instance}}")).
			Unit("ops").
			OverrideByRegexp("^errors .*", []dashboard.DynamicConfigValue{propColor(red)}).
			Legend(legendList()).
			GridPos(gridPos(6, 7))).
		WithPanel(newTable().
			Title("Exporter build").
			Description("Version and build of each exporter (ironic_exporter_build_info).").
			WithTarget(instant("A", "max by (instance, version, revision, branch, goversion) ("+sel("ironic_exporter_build_info")+")")).
			WithTransformation(organize([]string{"Time", "Value"},
				[]string{"instance", "version", "revision", "branch", "goversion"},
				map[string]string{"instance": "Instance", "version": "Version", "revision": "Revision", "branch": "Branch", "goversion": "Go"})).
			GridPos(gridPos(24, 5)))

	return build(b)
}
