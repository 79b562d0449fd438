package dashboards

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/prometheus/common/model"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	sdkprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// The dashboard-linter rules these tests reimplement are those of
// github.com/grafana/dashboard-linter, docs/rules/<rule>.md, implemented in
// lint/rule_<rule>.go. Each test names the rule it stands for. Where a test is
// stricter than the linter it says so.

// ---------------------------------------------------------------------------
// Loading.

type loaded struct {
	file   string
	raw    []byte
	dash   dashboard.Dashboard
	panels []dashboard.Panel // every panel but rows, nested ones included
}

var (
	loadOnce sync.Once
	loadAll  []loaded
	loadErr  error
)

// load reads every dashboards/*.json and decodes it strictly (decodeStrict).
func load(t *testing.T) []loaded {
	t.Helper()
	loadOnce.Do(func() {
		files, err := filepath.Glob("*.json")
		if err != nil {
			loadErr = err
			return
		}
		sort.Strings(files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				loadErr = err
				return
			}
			d, err := decodeStrict(raw)
			if err != nil {
				loadErr = fmt.Errorf("%s: strict decoding: %w", f, err)
				return
			}
			l := loaded{file: f, raw: raw, dash: d}
			for _, p := range d.Panels {
				switch {
				case p.Panel != nil:
					l.panels = append(l.panels, *p.Panel)
				case p.RowPanel != nil:
					l.panels = append(l.panels, p.RowPanel.Panels...)
				}
			}
			loadAll = append(loadAll, l)
		}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	if len(loadAll) == 0 {
		t.Fatal("no dashboards/*.json")
	}
	return loadAll
}

// decodeStrict decodes a dashboard with the SDK's strict unmarshalling:
// unknown fields, missing required fields and wrong types are errors, at
// every level, with the panel options, fieldConfig.defaults.custom and
// targets decoded into the types of their panel or query plugin.
//
// The SDK's UnmarshalJSONStrict returns its error list even when it is
// empty (a nil cog.BuildErrors in a non-nil error, grafana-foundation-sdk
// v0.0.22), and where it decodes a union (panel or row, a panel's options,
// custom field config and targets) it then drops the value silently: every
// panel comes back nil. So this decodes each level with the SDK's strict
// decoder of its own type and does the unions itself.
func decodeStrict(raw []byte) (dashboard.Dashboard, error) {
	var d dashboard.Dashboard
	if err := strict(d.UnmarshalJSONStrict(raw)); err != nil {
		return d, err
	}
	var top struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return d, err
	}
	d.Panels = nil
	for i, rp := range top.Panels {
		var head struct {
			Type   string            `json:"type"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(rp, &head); err != nil {
			return d, err
		}
		if head.Type != "row" {
			p, err := decodePanel(rp)
			if err != nil {
				return d, fmt.Errorf("panels[%d]: %w", i, err)
			}
			d.Panels = append(d.Panels, dashboard.PanelOrRowPanel{Panel: &p})
			continue
		}
		var r dashboard.RowPanel
		if err := strict(r.UnmarshalJSONStrict(rp)); err != nil {
			return d, fmt.Errorf("panels[%d]: %w", i, err)
		}
		r.Panels = []dashboard.Panel{}
		for j, np := range head.Panels {
			p, err := decodePanel(np)
			if err != nil {
				return d, fmt.Errorf("panels[%d].panels[%d]: %w", i, j, err)
			}
			r.Panels = append(r.Panels, p)
		}
		d.Panels = append(d.Panels, dashboard.PanelOrRowPanel{RowPanel: &r})
	}
	return d, nil
}

type strictUnmarshaler interface{ UnmarshalJSONStrict([]byte) error }

// The panel types the dashboards use, with the SDK types of their options
// and of their fieldConfig.defaults.custom (nil: the panel has none).
var panelTypes = map[string]struct{ options, custom func() strictUnmarshaler }{
	"stat":           {func() strictUnmarshaler { return &stat.Options{} }, nil},
	"timeseries":     {func() strictUnmarshaler { return &timeseries.Options{} }, func() strictUnmarshaler { return &timeseries.FieldConfig{} }},
	"table":          {func() strictUnmarshaler { return &table.Options{} }, func() strictUnmarshaler { return &table.FieldConfig{} }},
	"state-timeline": {func() strictUnmarshaler { return &statetimeline.Options{} }, func() strictUnmarshaler { return &statetimeline.FieldConfig{} }},
}

func decodePanel(raw []byte) (dashboard.Panel, error) {
	var p dashboard.Panel
	if err := strict(p.UnmarshalJSONStrict(raw)); err != nil {
		return p, err
	}
	types, ok := panelTypes[p.Type]
	if !ok {
		return p, fmt.Errorf("panel type %q: not one the tests know", p.Type)
	}
	var parts struct {
		Targets     []json.RawMessage `json:"targets"`
		Options     json.RawMessage   `json:"options"`
		FieldConfig json.RawMessage   `json:"fieldConfig"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return p, err
	}
	p.Targets = nil
	for i, rt := range parts.Targets {
		q := &sdkprom.Dataquery{}
		if err := strict(q.UnmarshalJSONStrict(rt)); err != nil {
			return p, fmt.Errorf("targets[%d]: %w", i, err)
		}
		p.Targets = append(p.Targets, q)
	}
	if parts.Options == nil {
		return p, errors.New("no options")
	}
	opts := types.options()
	if err := strict(opts.UnmarshalJSONStrict(parts.Options)); err != nil {
		return p, fmt.Errorf("options: %w", err)
	}
	p.Options = opts
	if parts.FieldConfig == nil {
		return p, errors.New("no fieldConfig")
	}
	// The SDK decodes fieldConfig leniently: refuse unknown fields here.
	dec := json.NewDecoder(bytes.NewReader(parts.FieldConfig))
	dec.DisallowUnknownFields()
	fc := &dashboard.FieldConfigSource{}
	if err := dec.Decode(fc); err != nil {
		return p, fmt.Errorf("fieldConfig: %w", err)
	}
	if fc.Defaults.Custom != nil {
		if types.custom == nil {
			return p, fmt.Errorf("fieldConfig.defaults.custom: panel type %q has none", p.Type)
		}
		raw, err := json.Marshal(fc.Defaults.Custom)
		if err != nil {
			return p, err
		}
		custom := types.custom()
		if err := strict(custom.UnmarshalJSONStrict(raw)); err != nil {
			return p, fmt.Errorf("fieldConfig.defaults.custom: %w", err)
		}
		fc.Defaults.Custom = custom
	}
	p.FieldConfig = fc
	return p, nil
}

// target is one Prometheus query of a panel.
type target struct {
	dash  *loaded
	panel dashboard.Panel
	query *sdkprom.Dataquery
}

func (t target) String() string {
	return fmt.Sprintf("%s: panel %q, target %s", t.dash.file, str(t.panel.Title), str(t.query.RefId))
}

func targets(t *testing.T) []target {
	t.Helper()
	var out []target
	ds := load(t)
	for i := range ds {
		for _, p := range ds[i].panels {
			for _, q := range p.Targets {
				pq, ok := q.(*sdkprom.Dataquery)
				if !ok {
					t.Fatalf("%s: panel %q: target %T is not a Prometheus query (decoded leniently)", ds[i].file, str(p.Title), q)
				}
				out = append(out, target{dash: &ds[i], panel: p, query: pq})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no targets")
	}
	return out
}

// strict turns the empty cog.BuildErrors that the SDK's UnmarshalJSONStrict
// and Validate return on success (a non-nil error interface holding a nil
// slice, in v0.0.22) into nil.
func strict(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ---------------------------------------------------------------------------
// The generator.

// TestGenerated: the committed JSON is what the generator writes, and every
// JSON file here is generated.
func TestGenerated(t *testing.T) {
	gen, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	on, _ := filepath.Glob("*.json")
	for _, f := range on {
		if _, ok := gen[f]; !ok {
			t.Errorf("%s is not generated by Generate(): remove it or add it to the generator", f)
		}
	}
	for name, want := range gen {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s: %v (run go generate ./mixin)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (run go generate ./mixin):\n%s",
				name, cmp.Diff(string(want), string(got)))
		}
	}
}

// ---------------------------------------------------------------------------
// Schema.

// TestStrictSchema: every dashboard decodes strictly with the SDK's types
// (decodeStrict, in load), passes the SDK's Validate, and marshals back to
// the same JSON, so that no field was unknown or dropped on the way.
func TestStrictSchema(t *testing.T) {
	for _, l := range load(t) {
		if err := strict(l.dash.Validate()); err != nil {
			t.Errorf("%s: Validate: %v", l.file, err)
		}
		again, err := Marshal(l.dash)
		if err != nil {
			t.Fatal(err)
		}
		// Compared as JSON values: override values are decoded as maps,
		// whose keys marshal in another order.
		var want, got any
		if err := json.Unmarshal(l.raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: decoding and encoding again changes it (-file +again):\n%s", l.file, diff)
		}
	}
}

// TestStrictSchemaRejects shows that the strict decoding does refuse what it
// should, so that TestStrictSchema means something.
func TestStrictSchemaRejects(t *testing.T) {
	l := load(t)[0]
	for name, mutate := range map[string]func(map[string]any){
		"unknown dashboard field": func(d map[string]any) { d["titel"] = "x" },
		"unknown panel field": func(d map[string]any) {
			d["panels"].([]any)[1].(map[string]any)["descr"] = "x" // not "description"
		},
		"unknown target field": func(d map[string]any) {
			p := d["panels"].([]any)[1].(map[string]any)
			p["targets"].([]any)[0].(map[string]any)["exp"] = "up"
		},
		"unknown stat option": func(d map[string]any) {
			d["panels"].([]any)[1].(map[string]any)["options"].(map[string]any)["colourMode"] = "x"
		},
		"wrong type": func(d map[string]any) { d["refresh"] = 60 },
	} {
		t.Run(name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(l.raw, &d); err != nil {
				t.Fatal(err)
			}
			mutate(d)
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeStrict(raw); err == nil {
				t.Errorf("strict decoding accepted it")
			}
		})
	}
}

// TestLayout: unique panel ids and titles, panels inside the 24-column grid
// and not overlapping, unique refIds within a panel, unique dashboard uids.
func TestLayout(t *testing.T) {
	uids := map[string]string{}
	for _, l := range load(t) {
		uid := str(l.dash.Uid)
		if uid == "" {
			t.Errorf("%s: no uid", l.file)
		}
		if prev, ok := uids[uid]; ok {
			t.Errorf("%s and %s share uid %q", prev, l.file, uid)
		}
		uids[uid] = l.file
		if !slices.Contains(l.dash.Tags, Tag) {
			t.Errorf("%s: not tagged %q, the dashboard links will not find it", l.file, Tag)
		}
		ids := map[uint32]bool{}
		titles := map[string]bool{}
		var boxes []dashboard.GridPos
		check := func(id uint32, title string, g *dashboard.GridPos) {
			if ids[id] {
				t.Errorf("%s: panel id %d twice", l.file, id)
			}
			ids[id] = true
			if titles[title] {
				t.Errorf("%s: panel title %q twice", l.file, title)
			}
			titles[title] = true
			if g == nil {
				t.Errorf("%s: panel %q has no gridPos", l.file, title)
				return
			}
			if g.W == 0 || g.H == 0 || g.X+g.W > 24 {
				t.Errorf("%s: panel %q: gridPos %+v outside the grid", l.file, title, *g)
			}
			for _, b := range boxes {
				if g.X < b.X+b.W && b.X < g.X+g.W && g.Y < b.Y+b.H && b.Y < g.Y+g.H {
					t.Errorf("%s: panel %q at %+v overlaps a panel at %+v", l.file, title, *g, b)
				}
			}
			boxes = append(boxes, *g)
		}
		for _, p := range l.dash.Panels {
			switch {
			case p.Panel != nil:
				if p.Panel.Id == nil {
					t.Errorf("%s: panel %q has no id", l.file, str(p.Panel.Title))
					continue
				}
				check(*p.Panel.Id, str(p.Panel.Title), p.Panel.GridPos)
				refs := map[string]bool{}
				for _, q := range p.Panel.Targets {
					ref := str(q.(*sdkprom.Dataquery).RefId)
					if ref == "" || refs[ref] {
						t.Errorf("%s: panel %q: refId %q empty or twice", l.file, str(p.Panel.Title), ref)
					}
					refs[ref] = true
				}
			case p.RowPanel != nil:
				check(p.RowPanel.Id, "row "+str(p.RowPanel.Title), p.RowPanel.GridPos)
				if p.RowPanel.Collapsed || len(p.RowPanel.Panels) > 0 {
					// Panels of collapsed rows hide from whoever walks the
					// top-level panels (the e2e test does).
					t.Errorf("%s: row %q is collapsed or nests panels", l.file, str(p.RowPanel.Title))
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Template variables.

func variable(d dashboard.Dashboard, name string) *dashboard.VariableModel {
	for i, v := range d.Templating.List {
		if v.Name == name {
			return &d.Templating.List[i]
		}
	}
	return nil
}

func queryString(v dashboard.VariableModel) string {
	if v.Query == nil || v.Query.String == nil {
		return ""
	}
	return *v.Query.String
}

func isDatasourceVar(ref string) bool { return ref == "$datasource" || ref == "${datasource}" }

// TestTemplateDatasourceRule, template-datasource-rule: the dashboard has a
// templated data source. With a single one the linter accepts the name
// "datasource" and the label "Data source" (lint/rule_template_datasource.go);
// its query is "prometheus", which the job, instance, label and target rules
// key on.
func TestTemplateDatasourceRule(t *testing.T) {
	for _, l := range load(t) {
		var ds []dashboard.VariableModel
		for _, v := range l.dash.Templating.List {
			if v.Type == "datasource" {
				ds = append(ds, v)
			}
		}
		if len(ds) != 1 {
			t.Errorf("%s: %d data source variables, want 1", l.file, len(ds))
			continue
		}
		v := ds[0]
		if v.Name != "datasource" || str(v.Label) != "Data source" || queryString(v) != "prometheus" {
			t.Errorf("%s: data source variable %q labelled %q querying %q, want \"datasource\", \"Data source\", \"prometheus\"",
				l.file, v.Name, str(v.Label), queryString(v))
		}
	}
}

// TestTemplateJobInstanceRules, template-job-rule and template-instance-rule
// (docs/rules/template-job-rule.md, lint/template_utils.go checkTemplate): a
// variable named job (instance), labelled "Job" ("Instance"), a Prometheus
// query on $datasource, multi-select, allValue ".+". Stricter than the
// linter: the All option is on too (allValue means nothing without it).
func TestTemplateJobInstanceRules(t *testing.T) {
	for _, l := range load(t) {
		for name, label := range map[string]string{"job": "Job", "instance": "Instance"} {
			v := variable(l.dash, name)
			if v == nil {
				t.Errorf("%s: no %s variable", l.file, name)
				continue
			}
			if v.Type != "query" {
				t.Errorf("%s: %s variable of type %q, want query", l.file, name, v.Type)
			}
			if v.Datasource == nil || !isDatasourceVar(str(v.Datasource.Uid)) {
				t.Errorf("%s: %s variable does not query $datasource", l.file, name)
			}
			if str(v.Label) != label {
				t.Errorf("%s: %s variable labelled %q, want %q", l.file, name, str(v.Label), label)
			}
			if v.Multi == nil || !*v.Multi {
				t.Errorf("%s: %s variable is not multi-select", l.file, name)
			}
			if v.IncludeAll == nil || !*v.IncludeAll || str(v.AllValue) != ".+" {
				t.Errorf("%s: %s variable: All option %v with allValue %q, want on with \".+\"", l.file, name, v.IncludeAll, str(v.AllValue))
			}
		}
	}
}

// labelValuesRE is label_values(<selector>, <label>), the form of
// template-label-promql-rule's newer implementation
// (lint/rule_template_label_promql.go, extractPromQLQuery).
var labelValuesRE = regexp.MustCompile(`(?s)^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// TestTemplateLabelPromQLRule, template-label-promql-rule: every query
// variable is label_values(...) of a PromQL selector that parses once the
// variables are expanded. Stricter than the linter: the selector's metric
// and label are in the metric contract, the variable refers only to
// variables defined before it, and (template-on-time-change-reload-rule)
// it refreshes when the time range changes.
func TestTemplateLabelPromQLRule(t *testing.T) {
	contract := metricContract(t)
	for _, l := range load(t) {
		defined := map[string]bool{}
		for _, v := range l.dash.Templating.List {
			if v.Type == "query" {
				q := queryString(v)
				m := labelValuesRE.FindStringSubmatch(q)
				if m == nil {
					t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", l.file, v.Name, q)
				} else {
					for _, ref := range variableRefs(m[1]) {
						if !defined[ref] {
							t.Errorf("%s: variable %s uses $%s, not defined before it", l.file, v.Name, ref)
						}
					}
					expr, err := parseExpr(expand(m[1], valuesForParsing))
					if err != nil {
						t.Errorf("%s: variable %s: %q: %v", l.file, v.Name, m[1], err)
					} else if vs, ok := expr.(*parser.VectorSelector); !ok {
						t.Errorf("%s: variable %s: %q is not a selector", l.file, v.Name, m[1])
					} else if c, ok := contract.lookup(vs.Name); !ok {
						t.Errorf("%s: variable %s: metric %q is not in the contract", l.file, v.Name, vs.Name)
					} else if !c.hasLabel(m[2]) {
						t.Errorf("%s: variable %s: metric %q has no label %q", l.file, v.Name, vs.Name, m[2])
					}
				}
				if v.Refresh == nil || *v.Refresh != dashboard.VariableRefreshOnTimeRangeChanged {
					t.Errorf("%s: variable %s does not refresh on time range change", l.file, v.Name)
				}
			}
			defined[v.Name] = true
		}
	}
}

// ---------------------------------------------------------------------------
// Panels.

// TestPanelDatasourceRule, panel-datasource-rule: every panel uses the
// templated data source. Stricter than the linter (which looks at some panel
// types only): every panel and every one of its targets.
func TestPanelDatasourceRule(t *testing.T) {
	for _, l := range load(t) {
		for _, p := range l.panels {
			if p.Datasource == nil || !isDatasourceVar(str(p.Datasource.Uid)) || str(p.Datasource.Type) != "prometheus" {
				t.Errorf("%s: panel %q does not use ${datasource}", l.file, str(p.Title))
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no targets", l.file, str(p.Title))
			}
		}
	}
	for _, tg := range targets(t) {
		if ds := tg.query.Datasource; ds == nil || !isDatasourceVar(str(ds.Uid)) {
			t.Errorf("%s does not use ${datasource}", tg)
		}
	}
}

// TestPanelTitleDescriptionRule, panel-title-description-rule: every panel
// has a title and a description (the linter checks some panel types only).
func TestPanelTitleDescriptionRule(t *testing.T) {
	for _, l := range load(t) {
		if str(l.dash.Title) == "" || str(l.dash.Description) == "" {
			t.Errorf("%s: no title or description", l.file)
		}
		for _, p := range l.panels {
			if strings.TrimSpace(str(p.Title)) == "" || strings.TrimSpace(str(p.Description)) == "" {
				t.Errorf("%s: a panel has title %q and description %q", l.file, str(p.Title), str(p.Description))
			}
		}
	}
}

// grafanaUnits are unit ids of Grafana's value formats
// (packages/grafana-data/src/valueFormats/categories.ts in grafana/grafana),
// the part of them a dashboard of this exporter can use.
var grafanaUnits = map[string]bool{
	// misc
	"none": true, "short": true, "string": true, "percent": true, "percentunit": true, "sci": true, "locale": true,
	// time
	"ns": true, "µs": true, "ms": true, "s": true, "m": true, "h": true, "d": true,
	"dtdurationms": true, "dtdurations": true, "dthms": true, "dtdhms": true, "clockms": true, "clocks": true, "hertz": true,
	// date
	"dateTimeAsIso": true, "dateTimeAsIsoNoDateIfToday": true, "dateTimeAsUS": true, "dateTimeAsLocal": true,
	"dateTimeAsSystem": true, "dateTimeFromNow": true,
	// throughput
	"ops": true, "reqps": true, "rps": true, "wps": true, "iops": true, "cps": true, "opm": true, "cpm": true,
	// data
	"bytes": true, "decbytes": true, "bits": true, "decbits": true,
	// boolean
	"bool": true, "bool_yes_no": true, "bool_on_off": true,
}

// TestPanelUnitsRule, panel-units-rule: every panel that shows numbers has
// a valid unit (lint/rule_panel_units.go checks stat, singlestat, graph,
// table, timeseries and gauge). Stricter: every panel, and the unit of
// every override too.
func TestPanelUnitsRule(t *testing.T) {
	for _, l := range load(t) {
		for _, p := range l.panels {
			if p.FieldConfig == nil || !grafanaUnits[str(p.FieldConfig.Defaults.Unit)] {
				var u string
				if p.FieldConfig != nil {
					u = str(p.FieldConfig.Defaults.Unit)
				}
				t.Errorf("%s: panel %q has no or an invalid unit %q", l.file, str(p.Title), u)
				continue
			}
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					if prop.Id != "unit" {
						continue
					}
					if u, _ := prop.Value.(string); !grafanaUnits[u] {
						t.Errorf("%s: panel %q: override unit %v is not a Grafana unit", l.file, str(p.Title), prop.Value)
					}
				}
			}
		}
	}
}

// TestThresholds: every panel has thresholds with an unbounded base step
// (Grafana needs one) and increasing steps, in its defaults and overrides.
func TestThresholds(t *testing.T) {
	checkSteps := func(where string, th dashboard.ThresholdsConfig) {
		if len(th.Steps) == 0 || th.Steps[0].Value != nil {
			t.Errorf("%s: thresholds do not start with a base step", where)
			return
		}
		for i := 2; i < len(th.Steps); i++ {
			if th.Steps[i].Value == nil || th.Steps[i-1].Value == nil || *th.Steps[i].Value <= *th.Steps[i-1].Value {
				t.Errorf("%s: threshold steps not increasing", where)
			}
		}
	}
	for _, l := range load(t) {
		for _, p := range l.panels {
			where := fmt.Sprintf("%s: panel %q", l.file, str(p.Title))
			if p.FieldConfig.Defaults.Thresholds != nil {
				checkSteps(where, *p.FieldConfig.Defaults.Thresholds)
			}
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					if prop.Id != "thresholds" {
						continue
					}
					raw, _ := json.Marshal(prop.Value)
					var th dashboard.ThresholdsConfig
					if err := strict(th.UnmarshalJSONStrict(raw)); err != nil {
						t.Errorf("%s: override thresholds: %v", where, err)
						continue
					}
					checkSteps(where+" override", th)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Queries.

// The variables a query may use: the e2e test substitutes exactly these.
var allowedVariables = map[string]bool{
	"datasource": true, "cluster": true, "job": true, "instance": true, "hostname": true,
	"__rate_interval": true, "__interval": true, "__range": true,
}

// Values that make the queries what Grafana sends: the e2e test substitutes
// similar ones. The durations are odd on purpose, so that a range in the
// parsed query tells which variable it came from (as the linter's
// expandVariables does with its magic durations).
var (
	rateInterval = 7*time.Minute + 13*time.Second
	interval     = 7*time.Minute + 17*time.Second
	rangeValue   = 7*time.Minute + 19*time.Second

	valuesForParsing = map[string]string{
		"datasource":      "prometheus",
		"cluster":         "eu-1",
		"job":             "ironic-conductor-exporter",
		"instance":        "localhost:10067",
		"hostname":        "cond-1.example.com",
		"__rate_interval": rateInterval.String(),
		"__interval":      interval.String(),
		"__range":         rangeValue.String(),
	}
	// valuesKeepingVariables expands the durations only, so that the
	// matchers keep "$job" and "$instance" for the target rules.
	valuesKeepingVariables = map[string]string{
		"__rate_interval": rateInterval.String(),
		"__interval":      interval.String(),
		"__range":         rangeValue.String(),
	}
)

// variableRE matches Grafana's variable syntaxes: $var, ${var}, ${var:fmt}
// and [[var]]. Names start with a letter or an underscore, so "$1" in a
// label_replace replacement is not a variable.
var variableRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]`)

func variableRefs(expr string) []string {
	var out []string
	for _, m := range variableRE.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1]+m[2]+m[3])
	}
	return out
}

func expand(expr string, values map[string]string) string {
	return variableRE.ReplaceAllStringFunc(expr, func(s string) string {
		m := variableRE.FindStringSubmatch(s)
		if v, ok := values[m[1]+m[2]+m[3]]; ok {
			return v
		}
		return s
	})
}

var promql = parser.NewParser(parser.Options{})

func parseExpr(s string) (parser.Expr, error) { return promql.ParseExpr(s) }

// TestTargetPromQLRule, target-promql-rule: every target has an expression
// that parses as PromQL once the variables are replaced by values, and uses
// only the variables the e2e test knows; $hostname only where the
// dashboard defines it.
func TestTargetPromQLRule(t *testing.T) {
	for _, tg := range targets(t) {
		if strings.TrimSpace(tg.query.Expr) == "" {
			t.Errorf("%s: empty expression", tg)
			continue
		}
		for _, ref := range variableRefs(tg.query.Expr) {
			if !allowedVariables[ref] {
				t.Errorf("%s: uses $%s, which the e2e test does not substitute", tg, ref)
			}
			if !strings.HasPrefix(ref, "__") && variable(tg.dash.dash, ref) == nil {
				t.Errorf("%s: uses $%s, not a variable of the dashboard", tg, ref)
			}
		}
		if _, err := parseExpr(expand(tg.query.Expr, valuesForParsing)); err != nil {
			t.Errorf("%s: %v\n%s", tg, err, tg.query.Expr)
		}
	}
}

// parsed returns the targets' expressions parsed with the durations
// expanded and $job, $instance, $hostname left in their strings. A target
// that does not parse fails the test and is left out.
func parsed(t *testing.T) map[*target]parser.Expr {
	t.Helper()
	out := map[*target]parser.Expr{}
	tgs := targets(t)
	for i := range tgs {
		e, err := parseExpr(expand(tgs[i].query.Expr, valuesKeepingVariables))
		if err != nil {
			t.Errorf("%s: %v", tgs[i], err)
			continue
		}
		out[&tgs[i]] = e
	}
	return out
}

// TestTargetJobInstanceRules, target-job-rule and target-instance-rule
// (lint/rule_target_job_instance.go): every selector of every query has
// job=~"$job" and instance=~"$instance".
func TestTargetJobInstanceRules(t *testing.T) {
	for tg, e := range parsed(t) {
		for _, sel := range parser.ExtractSelectors(e) {
			for _, want := range []*labels.Matcher{
				labels.MustNewMatcher(labels.MatchRegexp, ClusterLabel, "$cluster"),
				labels.MustNewMatcher(labels.MatchRegexp, "job", "$job"),
				labels.MustNewMatcher(labels.MatchRegexp, "instance", "$instance"),
			} {
				if !slices.ContainsFunc(sel, func(m *labels.Matcher) bool {
					return m.Name == want.Name && m.Type == want.Type && m.Value == want.Value
				}) {
					t.Errorf("%s: a selector %v lacks %s", tg, sel, want)
				}
			}
		}
	}
}

// TestTargetRateIntervalRule, target-rate-interval-rule
// (docs/rules/target-rate-interval-rule.md): every range of rate, irate and
// increase is $__rate_interval. (The linter's code checks rate and irate;
// its documentation, and this test, increase too.) Every range vector is an
// argument of a function call.
func TestTargetRateIntervalRule(t *testing.T) {
	for tg, e := range parsed(t) {
		parser.Inspect(e, func(node parser.Node, path []parser.Node) error {
			ms, ok := node.(*parser.MatrixSelector)
			if !ok {
				return nil
			}
			var call *parser.Call
			if len(path) > 0 {
				call, _ = path[len(path)-1].(*parser.Call)
			}
			switch {
			case call == nil:
				t.Errorf("%s: range vector %s outside a function call", tg, ms)
			case slices.Contains([]string{"rate", "irate", "increase"}, call.Func.Name) && ms.Range != rateInterval:
				t.Errorf("%s: %s over %s, want $__rate_interval", tg, call.Func.Name, ms.Range)
			}
			return nil
		})
	}
}

// TestTargetCounterAggRule, target-counter-agg-rule
// (lint/rule_target_counter_agg.go): a counter is only used as the range
// vector of rate, irate or increase. The linter recognises counters by the
// _total suffix; this test also by the contract's types (counters, and the
// _bucket, _sum and _count series of histograms).
func TestTargetCounterAggRule(t *testing.T) {
	contract := metricContract(t)
	for tg, e := range parsed(t) {
		parser.Inspect(e, func(node parser.Node, path []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := metricName(vs)
			c, _ := contract.lookup(name)
			if !strings.HasSuffix(name, "_total") && c.seriesType(name) != "counter" {
				return nil
			}
			if len(path) < 2 {
				t.Errorf("%s: counter %s not in rate, irate or increase", tg, name)
				return nil
			}
			_, ranged := path[len(path)-1].(*parser.MatrixSelector)
			call, _ := path[len(path)-2].(*parser.Call)
			if !ranged || call == nil || !slices.Contains([]string{"rate", "irate", "increase"}, call.Func.Name) {
				t.Errorf("%s: counter %s not in rate, irate or increase", tg, name)
			}
			return nil
		})
	}
}

func metricName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// The metric contract.

type metricDef struct {
	name, typ string
	labels    []string
}

type contract map[string]metricDef

var (
	contractOnce sync.Once
	contractVal  contract
	contractErr  error
)

// metricRowRE is a row of the README's metric table:
// | `name` | type | labels | meaning |
var metricRowRE = regexp.MustCompile("^\\|\\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\\s*\\|\\s*(gauge|counter|histogram|summary)\\s*\\|([^|]*)\\|")

// metricContract parses the metric table of the README's "Metrics"
// section: the contract the dashboards are written against, so that a
// metric renamed there and not here fails.
func metricContract(t *testing.T) contract {
	t.Helper()
	contractOnce.Do(func() {
		f, err := os.Open(filepath.Join("..", "README.md"))
		if err != nil {
			contractErr = err
			return
		}
		defer f.Close()
		c := contract{}
		in := false
		s := bufio.NewScanner(f)
		for s.Scan() {
			line := s.Text()
			if strings.HasPrefix(line, "## ") {
				in = strings.TrimSpace(line[3:]) == "Metrics"
				continue
			}
			if !in {
				continue
			}
			m := metricRowRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			var ls []string
			for _, l := range strings.Split(m[3], ",") {
				l = strings.Trim(strings.TrimSpace(l), "`")
				if l != "" && l != "..." {
					ls = append(ls, l)
				}
			}
			c[m[1]] = metricDef{name: m[1], typ: m[2], labels: ls}
		}
		if err := s.Err(); err != nil {
			contractErr = err
			return
		}
		if len(c) < 10 {
			contractErr = fmt.Errorf("README.md: found %d metrics in the Metrics table; has its format changed?", len(c))
			return
		}
		contractVal = c
	})
	if contractErr != nil {
		t.Fatal(contractErr)
	}
	return contractVal
}

// lookup finds the metric a series name belongs to: itself, or the
// histogram or summary it is the _bucket, _sum or _count of.
func (c contract) lookup(series string) (metricDef, bool) {
	if m, ok := c[series]; ok {
		return m, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(series, suffix)
		if !ok {
			continue
		}
		if m, ok := c[base]; ok && (m.typ == "histogram" || (m.typ == "summary" && suffix != "_bucket")) {
			return m, true
		}
	}
	return metricDef{}, false
}

// seriesType is the type of one series of the metric: the parts of a
// histogram are counters.
func (m metricDef) seriesType(series string) string {
	if series != m.name && (m.typ == "histogram" || m.typ == "summary") {
		return "counter"
	}
	return m.typ
}

// hasLabel: the metric has the label, or Prometheus adds it (job,
// instance), or it is a histogram's le.
func (m metricDef) hasLabel(l string) bool {
	switch l {
	case "job", "instance", ClusterLabel, model.MetricNameLabel:
		return true
	case "le":
		return m.typ == "histogram"
	}
	return slices.Contains(m.labels, l)
}

// TestMetricContract: every metric a query selects is in the README's metric
// table, every matcher names a label of that metric, and every label a
// query groups, matches or prints by is a label of some metric of the
// contract (or one a query itself makes with label_replace).
func TestMetricContract(t *testing.T) {
	c := metricContract(t)
	known := map[string]bool{"job": true, "instance": true, ClusterLabel: true, "le": true}
	for _, m := range c {
		for _, l := range m.labels {
			known[l] = true
		}
	}
	used := map[string]bool{}
	for tg, e := range parsed(t) {
		made := map[string]bool{}
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if call, ok := node.(*parser.Call); ok && call.Func.Name == "label_replace" && len(call.Args) > 1 {
				if s, ok := call.Args[1].(*parser.StringLiteral); ok {
					made[s.Val] = true
				}
			}
			return nil
		})
		knownLabel := func(l string) bool { return known[l] || made[l] }
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			switch n := node.(type) {
			case *parser.VectorSelector:
				name := metricName(n)
				m, ok := c.lookup(name)
				if !ok {
					t.Errorf("%s: metric %q is not in README.md's metric table", tg, name)
					return nil
				}
				used[m.name] = true
				if strings.HasSuffix(name, "_bucket") {
					m.typ = "histogram"
				}
				for _, lm := range n.LabelMatchers {
					if !m.hasLabel(lm.Name) {
						t.Errorf("%s: %s has no label %q", tg, name, lm.Name)
					}
				}
			case *parser.AggregateExpr:
				for _, l := range n.Grouping {
					if !knownLabel(l) {
						t.Errorf("%s: groups by %q, no metric has it", tg, l)
					}
				}
			case *parser.BinaryExpr:
				if n.VectorMatching != nil {
					for _, l := range append(slices.Clone(n.VectorMatching.MatchingLabels), n.VectorMatching.Include...) {
						if !knownLabel(l) {
							t.Errorf("%s: matches on %q, no metric has it", tg, l)
						}
					}
				}
			}
			return nil
		})
		for _, m := range regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`).FindAllStringSubmatch(str(tg.query.LegendFormat), -1) {
			if !knownLabel(m[1]) {
				t.Errorf("%s: legend prints {{%s}}, no metric has it", tg, m[1])
			}
		}
	}
	var unused []string
	for name := range c {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	t.Logf("metrics no dashboard shows: %v", unused)
}

// ---------------------------------------------------------------------------
// The queries on a topology.

// topology is a small fleet as two exporter instances scraping the same
// database report it, at eval time 10m (time() = 600):
//
//	c1  group ""   alive    heartbeat 595  ipmi     3 nodes  1 node locked
//	c5  group ""   alive    heartbeat 598  ipmi     1 node
//	c3  group ""   stopped  heartbeat  50  ipmi
//	c4  group g1   alive    heartbeat 590  redfish  2 nodes
//	c2  group g1   dead     heartbeat 100  redfish           2 nodes locked
//	ghost: no such conductor, 1 node locked; n7 (g2, idrac) has no conductor.
//
// and its Nova side (exporter a reads it all; b fails its nova_api read,
// read the unnamed cell last at 400 and assumes the computes' settings):
//
//	nc-0  cell1      up                 heartbeat 595  nodes 2 by instance, 3 by ring  ring member
//	nc-1  cell1      up, disabled       heartbeat 590  nodes 1 by instance
//	nc-2  (unnamed)  down, forced down  heartbeat 100  node refresh failing
//	cell1 read at 590; the unnamed cell failing, last read at 300 (a)
//	problems: 1 node_unclaimed, 2 instance_compute_down, the others 0
func topology() []map[string]string {
	type cond struct {
		host, group, state, hw string
		online, alive, member  float64
		heartbeat, nodes       float64
	}
	conds := []cond{
		{"c1", "", "alive", "ipmi", 1, 1, 1, 595, 3},
		{"c5", "", "alive", "ipmi", 1, 1, 1, 598, 1},
		{"c3", "", "stopped", "ipmi", 0, 0, 0, 50, 0},
		// alive 0 although running, as on SQLite 22.1+ (no heartbeats) or
		// for a draining conductor on 25.0+: its locks are not stuck
		{"c4", "g1", "alive", "redfish", 1, 0, 1, 590, 2},
		{"c2", "g1", "dead", "redfish", 1, 0, 0, 100, 0},
	}
	var series []map[string]string
	// addOn adds a series of one exporter instance, add one of both.
	addOn := func(inst, metric string, value float64, kv ...string) {
		ls := []string{`job="ironic"`, fmt.Sprintf("instance=%q", inst)}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] != "" { // an empty label is no label
				ls = append(ls, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
			}
		}
		series = append(series, map[string]string{
			"series": metric + "{" + strings.Join(ls, ", ") + "}",
			"values": fmt.Sprintf("%gx15", value),
		})
	}
	add := func(metric string, value float64, kv ...string) {
		for _, inst := range []string{"a:10067", "b:10067"} {
			addOn(inst, metric, value, kv...)
		}
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	add("ironic_up", 1)
	add("ironic_nodes", 7)
	for _, c := range conds {
		hg := []string{"hostname", c.host, "conductor_group", c.group}
		add("ironic_conductor_online", c.online, hg...)
		add("ironic_conductor_alive", c.alive, hg...)
		add("ironic_conductor_hash_ring_member", c.member, hg...)
		add("ironic_conductor_heartbeat_timestamp_seconds", c.heartbeat, hg...)
		add("ironic_conductor_nodes", c.nodes, hg...)
		add("ironic_conductor_hardware_type_info", 1, append(hg, "hardware_type", c.hw)...)
		for _, s := range states {
			add("ironic_conductor_state", b(s.text == c.state), append(hg, "state", s.text)...)
		}
	}
	add("ironic_conductor_reserved_nodes", 1, "hostname", "c1")
	add("ironic_conductor_reserved_nodes", 2, "hostname", "c2")
	add("ironic_conductor_reserved_nodes", 1, "hostname", "ghost")
	add("ironic_conductor_reserved_nodes", 2, "hostname", "c4")
	for _, n := range [][4]string{
		{"n1", "", "ipmi", "c1"}, {"n2", "", "ipmi", "c1"}, {"n3", "", "ipmi", "c1"}, {"n4", "", "ipmi", "c5"},
		{"n5", "g1", "redfish", "c4"}, {"n6", "g1", "redfish", "c4"}, {"n7", "g2", "idrac", ""},
	} {
		add("ironic_node_conductor_info", 1, "node_uuid", "uuid-"+n[0], "node_name", n[0],
			"conductor_group", n[1], "driver", n[2], "conductor", n[3])
	}
	add("ironic_hash_ring_conductors", 2, "conductor_group", "", "hardware_type", "ipmi")
	add("ironic_hash_ring_nodes", 4, "conductor_group", "", "hardware_type", "ipmi")
	add("ironic_hash_ring_conductors", 1, "conductor_group", "g1", "hardware_type", "redfish")
	add("ironic_hash_ring_nodes", 2, "conductor_group", "g1", "hardware_type", "redfish")
	add("ironic_nodes_without_conductor", 1, "conductor_group", "g2", "driver", "idrac")

	type compute struct {
		cell, host                            string
		up, disabled, forced, member, failing float64
		heartbeat, byInstance, byRing         float64
	}
	for _, c := range []compute{
		{"cell1", "nc-0", 1, 0, 0, 1, 0, 595, 2, 3},
		{"cell1", "nc-1", 1, 1, 0, 0, 0, 590, 1, 0},
		{"", "nc-2", 0, 0, 1, 0, 1, 100, 0, 0},
	} {
		ch := []string{"cell", c.cell, "host", c.host}
		add("ironic_nova_compute_up", c.up, ch...)
		add("ironic_nova_compute_disabled", c.disabled, ch...)
		add("ironic_nova_compute_forced_down", c.forced, ch...)
		add("ironic_nova_compute_ring_member", c.member, ch...)
		add("ironic_nova_compute_refresh_failing", c.failing, ch...)
		add("ironic_nova_compute_heartbeat_timestamp_seconds", c.heartbeat, ch...)
		add("ironic_nova_compute_nodes", c.byInstance, append(ch, "source", "instance")...)
		add("ironic_nova_compute_nodes", c.byRing, append(ch, "source", "ring")...)
	}
	addOn("a:10067", "ironic_exporter_nova_api_up", 1)
	addOn("b:10067", "ironic_exporter_nova_api_up", 0)
	addOn("a:10067", "ironic_exporter_nova_computes_settings_info", 1, "source", "file")
	addOn("b:10067", "ironic_exporter_nova_computes_settings_info", 1, "source", "assumed")
	add("ironic_exporter_nova_cell_up", 1, "cell", "cell1")
	add("ironic_exporter_nova_cell_last_read_timestamp_seconds", 590, "cell", "cell1")
	add("ironic_exporter_nova_cell_up", 0, "cell", "")
	addOn("a:10067", "ironic_exporter_nova_cell_last_read_timestamp_seconds", 300, "cell", "")
	addOn("b:10067", "ironic_exporter_nova_cell_last_read_timestamp_seconds", 400, "cell", "")
	for _, r := range []string{"node_unclaimed", "node_claimed_twice", "node_compute_down", "node_no_compute_record",
		"compute_record_host_differs", "instance_mismatch", "instance_compute_down", "compute_record_orphan"} {
		v := map[string]float64{"node_unclaimed": 1, "instance_compute_down": 2}[r]
		add("ironic_nova_problems", v, "reason", r)
	}
	return series
}

// TestQueriesOnATopology evaluates the panels that compute something with
// promtool (the Prometheus of the CI machine) on topology(), with every
// instance selected (the All value ".+"): the counts, the state numbers,
// stuck reservations, ring balance and the deduplication over exporter
// instances, with promtool (Debian prometheus).
func TestQueriesOnATopology(t *testing.T) {
	testenv.Need(t, testenv.Promtool)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
	def := `conductor_group="(default)"`
	cases := []struct {
		file, panel, ref, hostname string
		want                       []sample
	}{
		{"ironic-conductor-fleet.json", "Conductors by state", "A", "", []sample{
			{`{state="alive"}`, 3}, {`{state="draining"}`, 0}, {`{state="stopped"}`, 1}, {`{state="dead"}`, 1}}},
		{"ironic-conductor-fleet.json", "Nodes", "A", "", []sample{{`{}`, 7}}},
		{"ironic-conductor-fleet.json", "Nodes without conductor", "A", "", []sample{{`{}`, 1}}},
		{"ironic-conductor-fleet.json", "Stuck reservations", "A", "", []sample{{`{}`, 3}}},
		{"ironic-conductor-fleet.json", "Database reads", "A", "", []sample{{`{}`, 1}}},
		{"ironic-conductor-fleet.json", "Conductors", "A", "", []sample{
			{`{hostname="c1", ` + def + `}`, 1}, {`{hostname="c5", ` + def + `}`, 1}, {`{hostname="c3", ` + def + `}`, 3},
			{`{hostname="c4", conductor_group="g1"}`, 1}, {`{hostname="c2", conductor_group="g1"}`, 4}}},
		{"ironic-conductor-fleet.json", "Conductors", "D", "", []sample{
			{`{hostname="c1", ` + def + `}`, 1}, {`{hostname="c5", ` + def + `}`, 0}, {`{hostname="c3", ` + def + `}`, 0},
			{`{hostname="c4", conductor_group="g1"}`, 2}, {`{hostname="c2", conductor_group="g1"}`, 2}}},
		{"ironic-conductor-fleet.json", "Conductors by group and state", "A", "", []sample{
			{`{` + def + `, state="alive"}`, 2}, {`{` + def + `, state="draining"}`, 0},
			{`{` + def + `, state="stopped"}`, 1}, {`{` + def + `, state="dead"}`, 0},
			{`{conductor_group="g1", state="alive"}`, 1}, {`{conductor_group="g1", state="draining"}`, 0},
			{`{conductor_group="g1", state="stopped"}`, 0}, {`{conductor_group="g1", state="dead"}`, 1}}},
		{"ironic-conductor-fleet.json", "Heartbeat age", "A", "", []sample{
			{`{hostname="c1"}`, 5}, {`{hostname="c5"}`, 2}, {`{hostname="c4", conductor_group="g1"}`, 10},
			{`{hostname="c2", conductor_group="g1"}`, 500}}},
		{"ironic-conductor-fleet.json", "Hash rings", "C", "", []sample{
			{`{` + def + `, hardware_type="ipmi"}`, 1.5}, {`{conductor_group="g1", hardware_type="redfish"}`, 1}}},
		{"ironic-conductor-fleet.json", "Ring balance: spread of nodes per conductor", "A", "", []sample{
			{`{` + def + `}`, 0.5}, {`{conductor_group="g1"}`, 0}}},
		{"ironic-conductor-fleet.json", "Hosts holding stuck reservations", "A", "", []sample{
			{`{hostname="c2"}`, 2}, {`{hostname="ghost"}`, 1}}},
		{"ironic-conductor-fleet.json", "Nova-computes up", "A", "", []sample{{`{}`, 2}}},
		{"ironic-conductor-fleet.json", "Nova-computes up", "B", "", []sample{{`{}`, 1}}},
		{"ironic-conductor-fleet.json", "Nova-computes up", "C", "", []sample{{`{}`, 3}}},
		{"ironic-conductor-fleet.json", "Nova problems", "A", "", []sample{
			{`{reason="node_unclaimed"}`, 1}, {`{reason="node_claimed_twice"}`, 0}, {`{reason="node_compute_down"}`, 0},
			{`{reason="node_no_compute_record"}`, 0}, {`{reason="compute_record_host_differs"}`, 0},
			{`{reason="instance_mismatch"}`, 0}, {`{reason="instance_compute_down"}`, 2}, {`{reason="compute_record_orphan"}`, 0}}},
		{"ironic-conductor-fleet.json", "Nova database reads", "A", "", []sample{{`{}`, 0}}},
		{"ironic-conductor-fleet.json", "Nova-compute settings", "A", "", []sample{{`{}`, 1}}},
		{"ironic-conductor-fleet.json", "Nova-computes", "A", "", []sample{
			{`{cell="cell1", host="nc-0"}`, 1}, {`{cell="cell1", host="nc-1"}`, 1}, {`{cell="(unnamed)", host="nc-2"}`, 0}}},
		{"ironic-conductor-fleet.json", "Nova-computes", "E", "", []sample{
			{`{cell="cell1", host="nc-0"}`, 5}, {`{cell="cell1", host="nc-1"}`, 10}, {`{cell="(unnamed)", host="nc-2"}`, 500}}},
		{"ironic-conductor-fleet.json", "Nova-computes", "G", "", []sample{
			{`{cell="cell1", host="nc-0"}`, 3}, {`{cell="cell1", host="nc-1"}`, 0}, {`{cell="(unnamed)", host="nc-2"}`, 0}}},
		{"ironic-conductor-fleet.json", "Nodes per nova-compute", "A", "", []sample{
			{`{cell="cell1", host="nc-0"}`, 5}, {`{cell="cell1", host="nc-1"}`, 1}, {`{cell="(unnamed)", host="nc-2"}`, 0}}},
		{"ironic-conductor-fleet.json", "Nova cells", "A", "", []sample{{`{cell="cell1"}`, 1}, {`{cell="(unnamed)"}`, 0}}},
		{"ironic-conductor-fleet.json", "Nova cells", "B", "", []sample{{`{cell="cell1"}`, 10}, {`{cell="(unnamed)"}`, 300}}},
		{"ironic-conductor-detail.json", "State", "A", "c2", []sample{{`{}`, 4}}},
		{"ironic-conductor-detail.json", "State", "A", "c3", []sample{{`{}`, 3}}},
		{"ironic-conductor-detail.json", "Conductor group", "A", "c3", []sample{{`{` + def + `}`, 0}}},
		{"ironic-conductor-detail.json", "Conductor group", "A", "c2", []sample{{`{conductor_group="g1"}`, 1}}},
		{"ironic-conductor-detail.json", "Heartbeat age", "A", "c4", []sample{{`{}`, 10}}},
		{"ironic-conductor-detail.json", "Reserved nodes", "A", "c2", []sample{{`{}`, 2}}},
		{"ironic-conductor-detail.json", "Reserved nodes", "B", "c2", []sample{{`{}`, 2}}},
		{"ironic-conductor-detail.json", "Reserved nodes", "B", "c1", []sample{{`{}`, 0}}},
		{"ironic-conductor-detail.json", "Reserved nodes", "A", "c4", []sample{{`{}`, 2}}},
		{"ironic-conductor-detail.json", "Reserved nodes", "B", "c4", []sample{{`{}`, 0}}},
		{"ironic-conductor-detail.json", "Hardware types", "B", "c1", []sample{{`{` + def + `, hardware_type="ipmi"}`, 2}}},
		{"ironic-conductor-detail.json", "Hardware types", "C", "c1", []sample{{`{` + def + `, hardware_type="ipmi"}`, 3}}},
		{"ironic-conductor-detail.json", "Node list", "A", "c4", []sample{
			{`{node_name="n5", node_uuid="uuid-n5", driver="redfish", conductor_group="g1"}`, 1},
			{`{node_name="n6", node_uuid="uuid-n6", driver="redfish", conductor_group="g1"}`, 1}}},
	}
	exprOf := func(file, panel, ref string) string {
		for _, tg := range targets(t) {
			if tg.dash.file == file && str(tg.panel.Title) == panel && str(tg.query.RefId) == ref {
				return tg.query.Expr
			}
		}
		t.Fatalf("%s: no panel %q with target %s", file, panel, ref)
		return ""
	}
	var tests []map[string]any
	for _, c := range cases {
		values := map[string]string{
			"cluster": ".*", "job": "ironic", "instance": ".+", "hostname": c.hostname,
			"__rate_interval": "5m", "__interval": "1m", "__range": "6h",
		}
		tests = append(tests, map[string]any{
			"expr":        expand(exprOf(c.file, c.panel, c.ref), values),
			"eval_time":   "10m",
			"exp_samples": c.want,
		})
	}
	file := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":         "1m",
			"input_series":     topology(),
			"promql_expr_test": tests,
		}},
	}
	raw, err := json.MarshalIndent(file, "", "  ") // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboards_test.yml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// TestQueriesParseInPromtool: every query, variables substituted as for
// TestTargetPromQLRule, parses in the Prometheus the CI machine installs
// too (promtool check rules, with each query as a recording rule), which
// may be older than the Go parser this module uses.
func TestQueriesParseInPromtool(t *testing.T) {
	testenv.Need(t, testenv.Promtool)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal(err)
	}
	var rules []map[string]string
	for i, tg := range targets(t) {
		rules = append(rules, map[string]string{
			"record": fmt.Sprintf("dashboards:query_%d", i),
			"expr":   expand(tg.query.Expr, valuesForParsing),
		})
	}
	raw, err := json.MarshalIndent(map[string]any{
		"groups": []map[string]any{{"name": "dashboards", "rules": rules}},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("%d rules found", len(rules))) {
		t.Errorf("promtool did not check %d rules:\n%s", len(rules), out)
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`"a\u0026b\u003cc\u003ed"`: `"a&b<c>d"`,
		`"\\u0026"`:                `"\\u0026"`, // an escaped backslash, then text
		`"\\\u0026"`:               `"\\&"`,
		`"\u00e9\n"`:               `"\u00e9\n"`,
	} {
		if got := unescapeHTML.Replace(in); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
		var a, b string
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &b); err != nil || a != b {
			t.Errorf("%s and %s decode differently: %q %q %v", in, want, a, b, err)
		}
	}
}
