package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// The Nova side: the ironic nova-computes and how Nova sees Ironic's nodes.
// Its metrics exist only when the exporter reads Nova's databases
// (--nova.dsn or --nova.config-file); without, these panels show "No data".

// unnamedCell names a Nova cell without a name (Prometheus shows the empty
// string as a missing label; Kolla-Ansible creates its cell unnamed)
// "(unnamed)" for display.
func unnamedCell(expr string) string {
	return `label_replace(` + expr + `, "cell", "(unnamed)", "cell", "")`
}

// zeroWhenNova turns "no series" into 0 while the exporter reads Nova, as
// zeroWhenUp does for Ironic: "No data" is left for an exporter without
// the Nova side.
func zeroWhenNova(expr string) string {
	return expr + "\nor on () (0 * max(" + sel("ironic_exporter_nova_api_up") + "))"
}

// novaComputes is the value of metric per ironic nova-compute (cell, host).
func novaComputes(metric string, extra ...string) string {
	return "max by (cell, host) (" + sel(metric, extra...) + ")"
}

// Nova's [DEFAULT]report_interval and service_down_time default to 10 s
// and 60 s, Ironic's heartbeat interval and timeout: a nova-compute whose
// heartbeat is older than service_down_time is down.
var novaHeartbeatSteps = heartbeatSteps

// The reasons of ironic_nova_problems that are warnings (yellow) rather
// than errors (red), as the alerts rate them: a node Nova cannot schedule
// to yet (IronicNovaNodesUnschedulable, warning), a rebalance pending
// (IronicNovaRebalanceStuck, warning), and a leftover compute record of a
// node gone from Ironic, which harms no node.
var novaProblemWarnings = []string{"node_no_compute_record", "compute_record_host_differs", "compute_record_orphan"}

// novaRow adds the Nova row to the fleet dashboard.
func novaRow(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	up := novaComputes("ironic_nova_compute_up")
	problems := newThresholdStat(green, step{1, red}).
		Title("Nova problems").
		Description("What is wrong between Ironic's nodes and Nova, by reason (ironic_nova_problems; red, or yellow for a " +
			"warning, when any): node_unclaimed (no nova-compute manages the node), node_claimed_twice (two do), " +
			"node_compute_down (its nova-compute is down or disabled), node_no_compute_record (available, no compute " +
			"record: Nova cannot schedule to it; yellow), compute_record_host_differs (a rebalance pending or stuck; " +
			"yellow), instance_mismatch (Ironic's instance_uuid is not Nova's instance on the node), " +
			"instance_compute_down (an instance on a down nova-compute), compute_record_orphan (a compute record of a " +
			"node gone from Ironic; yellow).").
		WithTarget(statQuery("A", "max by (reason) ("+sel("ironic_nova_problems")+")", "{{reason}}")).
		Decimals(0).
		TextMode(common.BigValueTextModeValueAndName).
		GridPos(gridPos(12, 5))
	for _, r := range novaProblemWarnings {
		problems = problems.OverrideByName(r, []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, yellow})})
	}

	return b.WithRow(dashboard.NewRowBuilder("Nova")).
		WithPanel(newThresholdStat(text).
			Title("Nova-computes up").
			Description("Ironic nova-computes (nova-compute services with an ironic compute record) that Nova's servicegroup "+
				"says are up (not forced down, heartbeat within service_down_time), down (red when any), and in all "+
				"(ironic_nova_compute_up). A disabled nova-compute may be up: it still manages its nodes but leaves the "+
				"other computes' hash rings.").
			WithTarget(statQuery("A", zeroWhenNova("sum("+up+")"), "up")).
			WithTarget(statQuery("B", zeroWhenNova("sum(1 - "+up+")"), "down")).
			WithTarget(statQuery("C", zeroWhenNova("count("+up+")"), "total")).
			Decimals(0).
			OverrideByName("up", []dashboard.DynamicConfigValue{propColor(green)}).
			OverrideByName("down", []dashboard.DynamicConfigValue{propThresholdColor(), propThresholds(green, step{1, red})}).
			ColorMode(common.BigValueColorModeValue).
			TextMode(common.BigValueTextModeValueAndName).
			GridPos(gridPos(4, 5))).
		WithPanel(problems).
		WithPanel(newThresholdStat(red, step{1, green}).
			Title("Nova database reads").
			Description("Whether the latest read of Nova's nova_api database worked on every selected exporter (the minimum " +
				"of ironic_exporter_nova_api_up, as Database reads is of ironic_up). When it fails the exporters keep the " +
				"Nova answer of their last good read; the Nova cells table shows the reads of each cell.").
			WithTarget(statQuery("A", "min("+sel("ironic_exporter_nova_api_up")+")", "")).
			Mappings(valueMappings(mapping{"0", "Failing", red}, mapping{"1", "OK", green})).
			GridPos(gridPos(4, 5))).
		WithPanel(newThresholdStat(green, step{1, yellow}).
			Title("Nova-compute settings").
			Description("Where the exporters take each ironic nova-compute's [ironic] conductor_group, shard and peer_list " +
				"from (ironic_exporter_nova_computes_settings_info): the file of --nova.computes-file, or assumed when an " +
				"exporter has none (yellow): every compute is then taken with no [ironic] option set, and the Nova answers " +
				"are exact only for computes whose nova.conf sets none.").
			WithTarget(statQuery("A", "max("+sel("ironic_exporter_nova_computes_settings_info", `source="assumed"`)+")\n"+
				"or on () (0 * max("+sel("ironic_exporter_nova_computes_settings_info")+"))", "")).
			Mappings(valueMappings(mapping{"0", "From file", green}, mapping{"1", "Assumed", yellow})).
			GridPos(gridPos(4, 5))).
		WithPanel(newTable().
			Title("Nova-computes").
			Description("Every ironic nova-compute of every cell: whether Nova's servicegroup says it is up, disabled, forced "+
				"down, whether it is in the other computes' hash rings (enabled and up), the age of its last heartbeat "+
				"(last_seen_up, nova-conductor's clock; yellow from 30 s, red from service_down_time's default 60 s), the "+
				"nodes it manages in its own view because their instance is its own or because it owns them on its "+
				"ring, and whether its settings make its node refresh fail (InvalidPeerList).").
			WithTarget(instant("A", unnamedCell(up))).
			WithTarget(instant("B", unnamedCell(novaComputes("ironic_nova_compute_disabled")))).
			WithTarget(instant("C", unnamedCell(novaComputes("ironic_nova_compute_forced_down")))).
			WithTarget(instant("D", unnamedCell(novaComputes("ironic_nova_compute_ring_member")))).
			WithTarget(instant("E", unnamedCell("time() - "+novaComputes("ironic_nova_compute_heartbeat_timestamp_seconds")))).
			WithTarget(instant("F", unnamedCell(novaComputes("ironic_nova_compute_nodes", `source="instance"`)))).
			WithTarget(instant("G", unnamedCell(novaComputes("ironic_nova_compute_nodes", `source="ring"`)))).
			WithTarget(instant("H", unnamedCell(novaComputes("ironic_nova_compute_refresh_failing")))).
			WithTransformation(merge()).
			WithTransformation(organize([]string{"Time"},
				[]string{"cell", "host", "Value #A", "Value #B", "Value #C", "Value #D", "Value #E", "Value #F", "Value #G", "Value #H"},
				map[string]string{
					"cell": "Cell", "host": "Host", "Value #A": "Up", "Value #B": "Disabled", "Value #C": "Forced down",
					"Value #D": "Ring member", "Value #E": "Heartbeat age", "Value #F": "Nodes by instance",
					"Value #G": "Nodes by ring", "Value #H": "Node refresh",
				})).
			Decimals(0).
			Filterable(true).
			SortBy(tableSort("Host", false)).
			OverrideByName("Up", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "Down", red}, mapping{"1", "Up", green})}, propCellBackground(),
			}).
			OverrideByName("Disabled", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "Enabled", green}, mapping{"1", "Disabled", yellow})}, propCellBackground(),
			}).
			OverrideByName("Forced down", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "No", green}, mapping{"1", "Forced down", red})}, propCellBackground(),
			}).
			OverrideByName("Ring member", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "No", yellow}, mapping{"1", "Yes", green})}, propCellBackground(),
			}).
			OverrideByName("Heartbeat age", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}, propThresholdColor(), propThresholds(green, novaHeartbeatSteps...), propCellBackground()}).
			OverrideByName("Node refresh", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "OK", green}, mapping{"1", "Failing", red})}, propCellBackground(),
			}).
			GridPos(gridPos(24, 10))).
		WithPanel(newTimeseries().
			Title("Nodes per nova-compute").
			Description("Ironic nodes each ironic nova-compute manages in its own view, by instance and by ring together " +
				"(ironic_nova_compute_nodes). When a nova-compute goes down or is disabled, the nodes without an instance " +
				"move to the others' rings; those with an instance stay with it.").
			WithTarget(query("A", unnamedCell("sum by (cell, host) (max by (cell, host, source) ("+sel("ironic_nova_compute_nodes")+"))"), "{{cell}}: {{host}}")).
			Decimals(0).
			Legend(legendTable()).
			GridPos(gridPos(12, 8))).
		WithPanel(newTable().
			Title("Nova cells").
			Description("Each Nova cell: whether the latest read of its database worked on every selected exporter (the "+
				"minimum of ironic_exporter_nova_cell_up) and the age of the oldest read they serve "+
				"(ironic_exporter_nova_cell_last_read_timestamp_seconds; --nova.refresh-interval is 15 s by default: "+
				"yellow from 1 min, red from 5 min). A cell that fails keeps the answers of its last good read.").
			WithTarget(instant("A", unnamedCell("min by (cell) ("+sel("ironic_exporter_nova_cell_up")+")"))).
			WithTarget(instant("B", unnamedCell("time() - min by (cell) ("+sel("ironic_exporter_nova_cell_last_read_timestamp_seconds")+")"))).
			WithTransformation(merge()).
			WithTransformation(organize([]string{"Time"}, []string{"cell", "Value #A", "Value #B"},
				map[string]string{"cell": "Cell", "Value #A": "Reads", "Value #B": "Last read age"})).
			Decimals(0).
			SortBy(tableSort("Cell", false)).
			OverrideByName("Reads", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: valueMappings(mapping{"0", "Failing", red}, mapping{"1", "OK", green})}, propCellBackground(),
			}).
			OverrideByName("Last read age", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}, propThresholdColor(), propThresholds(green, step{60, yellow}, step{300, red}), propCellBackground()}).
			GridPos(gridPos(12, 8)))
}
