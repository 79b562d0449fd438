package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
)

const (
	matchHost      = `hostname="$hostname"`
	matchConductor = `conductor="$hostname"`
)

// Conductor is the drill-down into one conductor.
func Conductor() (dashboard.Dashboard, error) {
	b := newDashboard("Ironic conductors / Conductor", ConductorUID,
		"One OpenStack Ironic conductor: its state and heartbeat, the hardware types it registered, the nodes "+
			"Ironic's hash rings map to it and the locks it holds, from ironic-conductor-exporter.").
		WithVariable(labelVariable("hostname", "Conductor",
			"label_values(ironic_conductor_state{"+matchCluster+", "+matchJob+", "+matchInstance+"}, hostname)",
			"The conductor to show (Ironic's [DEFAULT]host of the conductor).").
			Multi(false).IncludeAll(false))

	stuck := "max(" + sel("ironic_conductor_reserved_nodes", matchHost) + ")\n" +
		"unless on () (max(" + sel("ironic_conductor_state", matchHost, running) + ") == 1)"

	b = b.WithRow(dashboard.NewRowBuilder("Conductor $hostname")).
		WithPanel(newThresholdStat(text).
			Title("State").
			Description("The conductor's state (ironic_conductor_state): alive (online, fresh heartbeat), draining " +
				"(offline, fresh heartbeat: unregistered less than heartbeat_timeout ago, or still draining on 23.1-31.x), " +
				"stopped (offline, stale: a clean stop), dead (online but stale: crashed, hung or stopped without unregistering).").
			WithTarget(statQuery("A", stateNumber("", matchHost), "state")).
			Mappings(valueMappings(states...)).
			TextMode(common.BigValueTextModeValue).
			GridPos(gridPos(4, 5))).
		WithPanel(newCountStat().
			Title("Conductor group").
			Description("The conductor's conductor_group; (default) is Ironic's default group, the empty string.").
			WithTarget(statQuery("A", defaultGroup("max by (conductor_group) ("+sel("ironic_conductor_online", matchHost)+")"), "{{conductor_group}}")).
			ColorMode(common.BigValueColorModeNone).
			GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeName).
			GridPos(gridPos(4, 5))).
		WithPanel(newThresholdStat(blue, step{1, green}).
			Title("Online").
			Description("The conductor's online column (ironic_conductor_online): set while it runs, cleared by a clean stop.").
			WithTarget(statQuery("A", "max("+sel("ironic_conductor_online", matchHost)+")", "")).
			Mappings(valueMappings(mapping{"0", "Offline", blue}, mapping{"1", "Online", green})).
			GridPos(gridPos(3, 5))).
		WithPanel(newThresholdStat(red, step{1, green}).
			Title("Hash ring member").
			Description("Whether Ironic puts the conductor in its hash rings (ironic_conductor_hash_ring_member): online " +
				"with a heartbeat younger than heartbeat_timeout. Only members are given nodes.").
			WithTarget(statQuery("A", "max("+sel("ironic_conductor_hash_ring_member", matchHost)+")", "")).
			Mappings(valueMappings(mapping{"0", "No", red}, mapping{"1", "Yes", green})).
			GridPos(gridPos(3, 5))).
		WithPanel(newThresholdStat(green, heartbeatSteps...).
			Title("Heartbeat age").
			Description("Seconds since the conductor's last heartbeat (time() - ironic_conductor_heartbeat_timestamp_seconds). " +
				"Ironic heartbeats every 10 s by default and gives up on a conductor after heartbeat_timeout (60 s by " +
				"default): yellow from 30 s, red from 60 s.").
			WithTarget(statQuery("A", "time() - max("+sel("ironic_conductor_heartbeat_timestamp_seconds", matchHost)+")", "")).
			Unit("s").
			GridPos(gridPos(3, 5))).
		WithPanel(newCountStat().
			Title("Nodes served").
			Description("Nodes the hash rings map to this conductor now (ironic_conductor_nodes).").
			WithTarget(query("A", "max("+sel("ironic_conductor_nodes", matchHost)+")", "nodes")).
			Decimals(0).
			GridPos(gridPos(3, 5))).
		WithPanel(newThresholdStat(text).
			Title("Reserved nodes").
			Description("Nodes whose reservation (lock) names this host (ironic_conductor_reserved_nodes). Red when the "+
				"host is not running (neither alive nor draining): those locks are stuck until a conductor of this name starts again.").
			WithTarget(statQuery("A", zeroWhenUp("max("+sel("ironic_conductor_reserved_nodes", matchHost)+")"), "reserved")).
			WithTarget(statQuery("B", zeroWhenUp(stuck), "stuck")).
			Decimals(0).
			OverrideByName("stuck", []dashboard.DynamicConfigValue{propThresholds(green, step{1, red})}).
			ColorMode(common.BigValueColorModeValue).
			TextMode(common.BigValueTextModeValueAndName).
			GridPos(gridPos(4, 5))).
		WithPanel(statetimeline.NewPanelBuilder().
			Title("State history").
			Description("The conductor's state over time (ironic_conductor_state).").
			Datasource(dsRef()).
			Unit("none").
			WithTarget(query("A", stateNumber("", matchHost), "state")).
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(text)).
			Mappings(valueMappings(states...)).
			ShowValue(common.VisibilityModeNever).
			MergeValues(true).
			Legend(legendList().ShowLegend(false)).
			GridPos(gridPos(24, 4))).
		WithPanel(newTimeseries().
			Title("Heartbeat age over time").
			Description("Seconds since the conductor's last heartbeat (time() - ironic_conductor_heartbeat_timestamp_seconds); " +
				"a saw tooth up to the heartbeat interval is healthy. Yellow from 30 s, red from heartbeat_timeout's " +
				"default 60 s.").
			WithTarget(query("A", "time() - max("+sel("ironic_conductor_heartbeat_timestamp_seconds", matchHost)+")", "heartbeat age")).
			Unit("s").
			Thresholds(thresholds(green, heartbeatSteps...)).
			ThresholdsStyle(dashedThresholds()).
			Legend(legendList()).
			GridPos(gridPos(8, 8))).
		WithPanel(newTimeseries().
			Title("Nodes and reservations").
			Description("Nodes the hash rings map to this conductor (ironic_conductor_nodes), nodes whose lock names it "+
				"(ironic_conductor_reserved_nodes), and those locks while it is not running (stuck, red).").
			WithTarget(query("A", "max("+sel("ironic_conductor_nodes", matchHost)+")", "nodes")).
			WithTarget(query("B", "max("+sel("ironic_conductor_reserved_nodes", matchHost)+")", "reserved")).
			WithTarget(query("C", stuck, "stuck")).
			Decimals(0).
			OverrideByName("stuck", []dashboard.DynamicConfigValue{propColor(red)}).
			Legend(legendList()).
			GridPos(gridPos(8, 8))).
		WithPanel(newTable().
			Title("Hardware types").
			Description("Hardware types the conductor registered (ironic_conductor_hardware_type_info), the active "+
				"conductors of the hash ring each forms in its group (ironic_hash_ring_conductors; none while this "+
				"conductor and every peer are out of the ring), and the nodes of each this conductor serves "+
				"(counted from ironic_node_conductor_info).").
			WithTarget(instant("A", defaultGroup("max by (conductor_group, hardware_type) ("+sel("ironic_conductor_hardware_type_info", matchHost)+")"))).
			WithTarget(instant("B", defaultGroup("max by (conductor_group, hardware_type) ("+sel("ironic_hash_ring_conductors")+")\n"+
				"and on (conductor_group, hardware_type) max by (conductor_group, hardware_type) ("+sel("ironic_conductor_hardware_type_info", matchHost)+")"))).
			WithTarget(instant("C", defaultGroup("sum by (conductor_group, hardware_type) (\n"+
				"  label_replace(\n"+
				"    count by (conductor_group, driver) (max by (node_uuid, conductor_group, driver) ("+sel("ironic_node_conductor_info", matchConductor)+")),\n"+
				`    "hardware_type", "$1", "driver", "(.*)"`+"\n"+
				"  )\n)"))).
			WithTransformation(merge()).
			WithTransformation(organize([]string{"Time", "Value #A"},
				[]string{"hardware_type", "conductor_group", "Value #B", "Value #C"},
				map[string]string{
					"hardware_type": "Hardware type", "conductor_group": "Group",
					"Value #B": "Ring conductors", "Value #C": "Nodes served",
				})).
			Decimals(0).
			OverrideByName("Ring conductors", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(red, step{1, yellow}, step{2, green}), propCellBackground()}).
			GridPos(gridPos(8, 8))).
		WithPanel(newTable().
			Title("Node list").
			Description("The nodes Ironic's hash rings map to this conductor (ironic_node_conductor_info{conductor=\"$hostname\"}). " +
				"Empty when the exporter runs with --no-collector.node-info.").
			WithTarget(instant("A", "max by (node_name, node_uuid, driver, conductor_group) ("+sel("ironic_node_conductor_info", matchConductor)+")")).
			WithTransformation(organize([]string{"Time", "Value"},
				[]string{"node_name", "node_uuid", "driver", "conductor_group"},
				map[string]string{"node_name": "Name", "node_uuid": "UUID", "driver": "Driver", "conductor_group": "Group"})).
			Filterable(true).
			SortBy(tableSort("Name", false)).
			NoValue("No nodes").
			GridPos(gridPos(24, 12)))

	return build(b)
}
