// Package dashboards generates the Grafana dashboards of
// ironic-conductor-exporter with grafana-foundation-sdk. The JSON files
// beside this file are its output: regenerate them, with every copy the
// mixin and the Helm chart keep, by `go generate ./mixin` (the project's one
// generator), never by hand (a test compares them with Generate).
package dashboards

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Tag is carried by every dashboard of the project; the dashboard links
// use it to offer the other dashboards.
const Tag = "ironic-conductor-exporter"

// UIDs of the dashboards, stable across regenerations so that links and
// bookmarks keep working.
const (
	FleetUID     = "ironic-conductor-fleet"
	ConductorUID = "ironic-conductor-detail"
)

// Generate builds every dashboard and returns its JSON by file name (the
// name the file has in this directory).
func Generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, build := range map[string]func() (dashboard.Dashboard, error){
		"ironic-conductor-fleet.json":  Fleet,
		"ironic-conductor-detail.json": Conductor,
	} {
		d, err := build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		b, err := Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// Marshal renders a dashboard as the indented JSON Grafana imports, with &,
// < and > unescaped (unescapeHTML) so that URLs and expressions read as
// written.
func Marshal(d dashboard.Dashboard) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return []byte(unescapeHTML.Replace(string(b)) + "\n"), nil
}

// unescapeHTML undoes the \u0026, \u003c and \u003e escapes json.Marshal
// writes for &, < and > (the SDK's own MarshalJSON methods call it, whatever
// an outer encoder says). An escaped backslash is matched first and kept, so
// that the text \\u0026 stays as it is.
var unescapeHTML = strings.NewReplacer(`\\`, `\\`, `\u0026`, "&", `\u003c`, "<", `\u003e`, ">")

// ClusterLabel is the label that tells clusters (regions, sites) apart: the
// cluster variable lists its values and every query matches it. It is the
// default of the mixin's _config.clusterLabel (mixin/config.libsonnet),
// which rewrites it in the mixin's copy of the dashboards.
const ClusterLabel = "cluster"

// The template variables. Every dashboard has datasource, cluster, job and instance
// as dashboard-linter's template-datasource-rule, template-job-rule and
// template-instance-rule require; every query selects job=~"$job" and
// instance=~"$instance" (target-job-rule, target-instance-rule), and
// cluster=~"$cluster" (All is ".*", so series without the label match).
const (
	varDatasource = "$datasource"
	matchCluster  = ClusterLabel + `=~"$cluster"`
	matchJob      = `job=~"$job"`
	matchInstance = `instance=~"$instance"`
)

// sel returns the selector of metric restricted to the chosen job and
// instance, plus the extra matchers.
func sel(metric string, extra ...string) string {
	return metric + "{" + strings.Join(append([]string{matchCluster, matchJob, matchInstance}, extra...), ", ") + "}"
}

func dsRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr(varDatasource)}
}

// promQuery is a query of expr on $datasource.
func promQuery(ref, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		RefId(ref).
		Datasource(dsRef()).
		Expr(expr)
}

// query is a range query.
func query(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return promQuery(ref, expr).Range().LegendFormat(legend)
}

// instant is an instant query in table format, for table panels.
func instant(ref, expr string) *prometheus.DataqueryBuilder {
	return promQuery(ref, expr).Instant().Format(prometheus.PromQueryFormatTable)
}

// statQuery is an instant query for a stat panel; legend may be empty.
func statQuery(ref, expr, legend string) *prometheus.DataqueryBuilder {
	q := promQuery(ref, expr).Instant()
	if legend != "" {
		q.LegendFormat(legend)
	}
	return q
}

// Grafana's named colours.
const (
	green  = "green"
	yellow = "yellow"
	red    = "red"
	blue   = "blue"
	text   = "text"
)

type step struct {
	value float64
	color string
}

// thresholds returns absolute thresholds: base colour below the first
// step, then each step's colour from its value up.
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

func fixedColor(c string) *dashboard.FieldColorBuilder {
	return dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdFixed).FixedColor(c)
}

func thresholdColor() *dashboard.FieldColorBuilder {
	return dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)
}

// mapping is one value-to-text mapping with its colour.
type mapping struct {
	value, text, color string
}

func valueMappings(ms ...mapping) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, m := range ms {
		opts[m.value] = dashboard.ValueMappingResult{
			Text: cog.ToPtr(m.text), Color: cog.ToPtr(m.color), Index: cog.ToPtr(int32(i)),
		}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// Override properties.
func propColor(c string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": c}}
}

func propThresholds(base string, steps ...step) dashboard.DynamicConfigValue {
	t, err := thresholds(base, steps...).Build()
	if err != nil {
		panic(err) // static input
	}
	return dashboard.DynamicConfigValue{Id: "thresholds", Value: t}
}

func propThresholdColor() dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "color", Value: map[string]any{"mode": "thresholds"}}
}

func propCellBackground() dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}}
}

func propLink(title, url string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "links", Value: []map[string]any{{"title": title, "url": url}}}
}

// Conductor states as ironic_conductor_state labels them, with the number
// and colour the dashboards show them with.
var states = []mapping{
	{"1", "alive", green},
	{"2", "draining", yellow},
	{"3", "stopped", blue},
	{"4", "dead", red},
}

// stateOverrides colour the series named after a state (legend {{state}}).
func stateOverrides() []cog.Builder[dashboard.DashboardFieldConfigSourceOverrides] {
	var out []cog.Builder[dashboard.DashboardFieldConfigSourceOverrides]
	for _, s := range states {
		out = append(out, dashboard.NewDashboardFieldConfigSourceOverridesBuilder().
			Matcher(dashboard.MatcherConfig{Id: "byName", Options: s.text}).
			Properties([]dashboard.DynamicConfigValue{propColor(s.color)}))
	}
	return out
}

// stateNumber is a query whose value is the number of the state (1 alive,
// 2 draining, 3 stopped, 4 dead) of the conductors selected by match,
// grouped by the given labels.
func stateNumber(by string, match ...string) string {
	parts := make([]string, len(states))
	for i, s := range states {
		m := append(append([]string{}, match...), fmt.Sprintf("state=%q", s.text))
		term := fmt.Sprintf("max%s(%s)", by, sel("ironic_conductor_state", m...))
		if i > 0 {
			term = s.value + " * " + term
		}
		parts[i] = term
	}
	return strings.Join(parts, "\n+ ")
}

// Heartbeat thresholds: Ironic's [conductor]heartbeat_interval is 10 s and
// heartbeat_timeout 60 s by default; a conductor older than the timeout is
// no longer alive and leaves the hash rings.
var heartbeatSteps = []step{{30, yellow}, {60, red}}

func labelVariable(name, label, query, description string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalCaseInsensitiveAsc)
}

// conductorURL is the drill-down for the conductor named by a Grafana
// interpolation (e.g. ${__value.raw}), keeping the time range, the data
// source, job and instance.
func conductorURL(hostname string) string {
	return "/d/" + ConductorUID + "?${__url_time_range}&${datasource:queryparam}&${cluster:queryparam}&${job:queryparam}&${instance:queryparam}&var-hostname=" + hostname
}

// newDashboard is a dashboard of the project with the variables every one
// has: datasource, cluster, job and instance.
func newDashboard(title, uid, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"ironic", "openstack", Tag}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone("browser").
		// The project's other dashboards, keeping the time range and the
		// variables.
		Link(dashboard.NewDashboardLinkBuilder("Ironic conductors").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{Tag}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true)).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Annotations & Alerts").
			Datasource(common.DataSourceRef{Type: cog.ToPtr("grafana"), Uid: cog.ToPtr("-- Grafana --")}).
			Type("dashboard").
			BuiltIn(1).
			Enable(true).
			Hide(true).
			IconColor("rgba(0, 211, 255, 1)")).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Description("Prometheus that scrapes ironic-conductor-exporter.").
			Type("prometheus")).
		// The clusters (or regions) Prometheus sees. All is ".*" so that a
		// Prometheus without the label (one Ironic, no external labels)
		// still matches every series.
		WithVariable(labelVariable("cluster", "Cluster", "label_values(ironic_up, "+ClusterLabel+")",
			"Clusters or regions, by the "+ClusterLabel+" label; empty when Prometheus has none.").
			Multi(true).IncludeAll(true).AllValue(".*")).
		// job and instance are as dashboard-linter's template-job-rule and
		// template-instance-rule want them: a Prometheus query on
		// $datasource, labelled "Job"/"Instance", multi-select, with an All
		// option whose value is ".+".
		WithVariable(labelVariable("job", "Job", "label_values(ironic_up{"+matchCluster+"}, job)",
			"Prometheus jobs that scrape ironic-conductor-exporter.").
			Multi(true).IncludeAll(true).AllValue(".+")).
		WithVariable(labelVariable("instance", "Instance", "label_values(ironic_up{"+matchCluster+", "+matchJob+"}, instance)",
			"Exporter instances. Several instances reading the same Ironic database report the same topology: "+
				"the panels take the maximum over instances, so selecting several never double counts.").
			Multi(true).IncludeAll(true).AllValue(".+"))
}

// Every panel is on $datasource; its unit is "none" unless it sets one.

// newStat is a stat panel showing the last value.
func newStat() *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Datasource(dsRef()).
		Unit("none").
		Orientation(common.VizOrientationAuto).
		JustifyMode(common.BigValueJustifyModeAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// newThresholdStat is a stat panel whose background takes the colour of
// the thresholds (base below the first step), without a graph.
func newThresholdStat(base string, steps ...step) *stat.PanelBuilder {
	return newStat().
		ColorScheme(thresholdColor()).
		Thresholds(thresholds(base, steps...)).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone)
}

// newCountStat is a stat panel showing a count in the text colour, over a
// graph of it.
func newCountStat() *stat.PanelBuilder {
	return newStat().
		ColorScheme(fixedColor(text)).
		Thresholds(thresholds(text)).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(common.BigValueGraphModeArea)
}

// newTimeseries is a time series panel: palette colours from 0, every
// series in the tooltip.
func newTimeseries() *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Datasource(dsRef()).
		Unit("none").
		Min(0).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
}

// dashedThresholds draws a time series panel's thresholds as dashed lines.
func dashedThresholds() *common.GraphThresholdsStyleConfigBuilder {
	return common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)
}

// newTable is a table panel.
func newTable() *table.PanelBuilder {
	return table.NewPanelBuilder().
		Datasource(dsRef()).
		Unit("none").
		CellHeight(common.TableCellHeightSm).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}))
}

// build finishes a dashboard: it numbers the panels in order, so that the
// ids are stable and unique.
func build(b *dashboard.DashboardBuilder) (dashboard.Dashboard, error) {
	d, err := b.Build()
	if err != nil {
		return d, err
	}
	// The SDK defaults a link's placement to Grafana 12's controls menu;
	// leave it where every Grafana shows it, above the panels.
	for i := range d.Links {
		d.Links[i].Placement = nil
	}
	for i, p := range d.Panels {
		id := uint32(i + 1)
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
	return d, nil
}

func gridPos(w, h uint32) dashboard.GridPos {
	return dashboard.GridPos{W: w, H: h}
}

func legendTable() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		ShowLegend(true).
		Calcs([]string{"lastNotNull", "max"}).
		SortBy("Last *").
		SortDesc(true)
}

func legendList() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		DisplayMode(common.LegendDisplayModeList).
		Placement(common.LegendPlacementBottom).
		ShowLegend(true)
}

// organize is the "organize fields" transformation: it hides the fields
// named in exclude, orders and renames the others.
func organize(exclude []string, order []string, rename map[string]string) dashboard.DataTransformerConfig {
	ex := map[string]bool{}
	for _, f := range exclude {
		ex[f] = true
	}
	idx := map[string]int{}
	for i, f := range order {
		idx[f] = i
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"excludeByName": ex,
		"indexByName":   idx,
		"renameByName":  rename,
	}}
}

func merge() dashboard.DataTransformerConfig {
	return dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}
}

// tableSort is a table panel's sort by one field.
func tableSort(field string, desc bool) []cog.Builder[common.TableSortByFieldState] {
	return []cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName(field).Desc(desc)}
}

// seriesLink links the series of a conductor (a hostname label) to its
// drill-down. It is set as an override of the number fields rather than
// as the SDK's data links, which would carry the fields of a dashboard
// link.
func seriesLink() dashboard.DynamicConfigValue {
	return propLink("Conductor ${__field.labels.hostname}", conductorURL("${__field.labels.hostname}"))
}
