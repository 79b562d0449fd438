package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

const (
	matchHost      = `hostname="$hostname"`
	matchConductor = `conductor="$hostname"`
)

func hostnameVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("hostname", "Conductor",
		"label_values(ironic_conductor_state{"+matchCluster+", "+matchJob+", "+matchInstance+"}, hostname)",
		"The conductor to show (Ironic's [DEFAULT]host of the conductor).").
		Multi(false).IncludeAll(false)
}

// Conductor is the drill-down into one conductor.
func Conductor() (dashboard.Dashboard, error) {
	b := newDashboard("Ironic conductors / Conductor", ConductorUID,
		"One OpenStack Ironic conductor: its state and heartbeat, the hardware types it registered, the nodes "+
			"Ironic's hash rings map to it and the locks it holds, from ironic-conductor-exporter.").
		WithVariable(datasourceVariable()).
		WithVariable(clusterVariable()).
		WithVariable(jobVariable()).
		WithVariable(instanceVariable()).
		WithVariable(hostnameVariable())

	stuck := "max(" + sel("ironic_conductor_reserved_nodes", matchHost) + ")\n" +
		"unless on () (max(" + sel("ironic_conductor_state", matchHost, running) + ") == 1)"

	b = b.WithRow(row("Conductor $hostname")).
		WithPanel(newStat().
			Title("State").
			Description("The conductor's state (ironic_conductor_state): alive (online, fresh heartbeat), draining " +
				"(offline, still heartbeating), stopped (offline, stale: a clean stop), dead (online but stale: crashed " +
				"or hung).").
			Datasource(dsRef()).
			WithTarget(statQuery("A", stateNumber("", matchHost), "state")).
			Unit("none").
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(text)).
			Mappings(valueMappings(states...)).
			ColorMode(common.BigValueColorModeBackground).
			GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeValue).
			ReduceOptions(lastValue()).
			GridPos(gridPos(4, 5))).
		WithPanel(newStat().
			Title("Conductor group").
			Description("The conductor's conductor_group; (default) is Ironic's default group, the empty string.").
			Datasource(dsRef()).
			WithTarget(statQuery("A", defaultGroup("max by (conductor_group) ("+sel("ironic_conductor_online", matchHost)+")"), "{{conductor_group}}")).
			Unit("none").
			ColorScheme(fixedColor(text)).
			Thresholds(thresholds(text)).
			ColorMode(common.BigValueColorModeNone).
			GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeName).
			ReduceOptions(lastValue()).
			GridPos(gridPos(4, 5))).
		WithPanel(newStat().
			Title("Online").
			Description("The conductor's online column (ironic_conductor_online): set while it runs, cleared by a clean stop.").
			Datasource(dsRef()).
			WithTarget(statQuery("A", "max("+sel("ironic_conductor_online", matchHost)+")", "")).
			Unit("none").
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(blue, step{1, green})).
			Mappings(valueMappings(mapping{"0", "Offline", blue}, mapping{"1", "Online", green})).
			ColorMode(common.BigValueColorModeBackground).
			GraphMode(common.BigValueGraphModeNone).
			ReduceOptions(lastValue()).
			GridPos(gridPos(3, 5))).
		WithPanel(newStat().
			Title("Hash ring member").
			Description("Whether Ironic puts the conductor in its hash rings (ironic_conductor_hash_ring_member): online " +
				"with a heartbeat younger than heartbeat_timeout. Only members are given nodes.").
			Datasource(dsRef()).
			WithTarget(statQuery("A", "max("+sel("ironic_conductor_hash_ring_member", matchHost)+")", "")).
			Unit("none").
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(red, step{1, green})).
			Mappings(valueMappings(mapping{"0", "No", red}, mapping{"1", "Yes", green})).
			ColorMode(common.BigValueColorModeBackground).
			GraphMode(common.BigValueGraphModeNone).
			ReduceOptions(lastValue()).
			GridPos(gridPos(3, 5))).
		WithPanel(newStat().
			Title("Heartbeat age").
			Description("Seconds since the conductor's last heartbeat (time() - ironic_conductor_heartbeat_timestamp_seconds). " +
				"Ironic heartbeats every 10 s by default and gives up on a conductor after heartbeat_timeout (60 s by " +
				"default): yellow from 30 s, red from 60 s.").
			Datasource(dsRef()).
			WithTarget(statQuery("A", "time() - max("+sel("ironic_conductor_heartbeat_timestamp_seconds", matchHost)+")", "")).
			Unit("s").
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(green, heartbeatSteps...)).
			ColorMode(common.BigValueColorModeBackground).
			GraphMode(common.BigValueGraphModeNone).
			ReduceOptions(lastValue()).
			GridPos(gridPos(3, 5))).
		WithPanel(newStat().
			Title("Nodes served").
			Description("Nodes the hash rings map to this conductor now (ironic_conductor_nodes).").
			Datasource(dsRef()).
			WithTarget(query("A", "max("+sel("ironic_conductor_nodes", matchHost)+")", "nodes")).
			Unit("none").
			Decimals(0).
			ColorScheme(fixedColor(text)).
			Thresholds(thresholds(text)).
			ColorMode(common.BigValueColorModeValue).
			GraphMode(common.BigValueGraphModeArea).
			ReduceOptions(lastValue()).
			GridPos(gridPos(3, 5))).
		WithPanel(newStat().
			Title("Reserved nodes").
			Description("Nodes whose reservation (lock) names this host (ironic_conductor_reserved_nodes). Red when the "+
				"host is not running (neither alive nor draining): those locks are stuck until a conductor of this name starts again.").
			Datasource(dsRef()).
			WithTarget(statQuery("A", zeroWhenUp("max("+sel("ironic_conductor_reserved_nodes", matchHost)+")"), "reserved")).
			WithTarget(statQuery("B", zeroWhenUp(stuck), "stuck")).
			Unit("none").
			Decimals(0).
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(text)).
			OverrideByName("stuck", []dashboard.DynamicConfigValue{propThresholds(green, step{1, red})}).
			ColorMode(common.BigValueColorModeValue).
			GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeValueAndName).
			ReduceOptions(lastValue()).
			GridPos(gridPos(4, 5))).
		WithPanel(statetimeline.NewPanelBuilder().
			Title("State history").
			Description("The conductor's state over time (ironic_conductor_state).").
			Datasource(dsRef()).
			WithTarget(query("A", stateNumber("", matchHost), "state")).
			Unit("none").
			ColorScheme(thresholdColor()).
			Thresholds(thresholds(text)).
			Mappings(valueMappings(states...)).
			ShowValue(common.VisibilityModeNever).
			MergeValues(true).
			Legend(legendList().ShowLegend(false)).
			GridPos(gridPos(24, 4))).
		WithPanel(timeseries.NewPanelBuilder().
			Title("Heartbeat age over time").
			Description("Seconds since the conductor's last heartbeat (time() - ironic_conductor_heartbeat_timestamp_seconds); " +
				"a saw tooth up to the heartbeat interval is healthy. Yellow from 30 s, red from heartbeat_timeout's " +
				"default 60 s.").
			Datasource(dsRef()).
			WithTarget(query("A", "time() - max("+sel("ironic_conductor_heartbeat_timestamp_seconds", matchHost)+")", "heartbeat age")).
			Unit("s").
			Min(0).
			ColorScheme(paletteColor()).
			Thresholds(thresholds(green, heartbeatSteps...)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
			Legend(legendList()).
			Tooltip(tooltipAll()).
			GridPos(gridPos(8, 8))).
		WithPanel(timeseries.NewPanelBuilder().
			Title("Nodes and reservations").
			Description("Nodes the hash rings map to this conductor (ironic_conductor_nodes), nodes whose lock names it "+
				"(ironic_conductor_reserved_nodes), and those locks while it is not running (stuck, red).").
			Datasource(dsRef()).
			WithTarget(query("A", "max("+sel("ironic_conductor_nodes", matchHost)+")", "nodes")).
			WithTarget(query("B", "max("+sel("ironic_conductor_reserved_nodes", matchHost)+")", "reserved")).
			WithTarget(query("C", stuck, "stuck")).
			Unit("none").
			Decimals(0).
			Min(0).
			ColorScheme(paletteColor()).
			OverrideByName("stuck", []dashboard.DynamicConfigValue{propColor(red)}).
			Legend(legendList()).
			Tooltip(tooltipAll()).
			GridPos(gridPos(8, 8))).
		WithPanel(newTable().
			Title("Hardware types").
			Description("Hardware types the conductor registered (ironic_conductor_hardware_type_info), the active "+
				"conductors of the hash ring each forms in its group (ironic_hash_ring_conductors; none while this "+
				"conductor and every peer are out of the ring), and the nodes of each this conductor serves "+
				"(counted from ironic_node_conductor_info).").
			Datasource(dsRef()).
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
			Unit("none").
			Decimals(0).
			OverrideByName("Ring conductors", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(red, step{1, yellow}, step{2, green}), propCellBackground()}).
			GridPos(gridPos(8, 8))).
		WithPanel(newTable().
			Title("Node list").
			Description("The nodes Ironic's hash rings map to this conductor (ironic_node_conductor_info{conductor=\"$hostname\"}). " +
				"Empty when the exporter runs with --no-collector.node-info.").
			Datasource(dsRef()).
			WithTarget(instant("A", "max by (node_name, node_uuid, driver, conductor_group) ("+sel("ironic_node_conductor_info", matchConductor)+")")).
			WithTransformation(organize([]string{"Time", "Value"},
				[]string{"node_name", "node_uuid", "driver", "conductor_group"},
				map[string]string{"node_name": "Name", "node_uuid": "UUID", "driver": "Driver", "conductor_group": "Group"})).
			Unit("none").
			Filterable(true).
			SortBy([]sortBuilder{tableSort("Name", false)}).
			NoValue("No nodes").
			GridPos(gridPos(24, 12)))

	return build(b)
}
