package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Grafana side of the end-to-end test: the dashboards' JSON files are
// read as Grafana would, their template variables resolved against the real
// Prometheus as Grafana resolves them, and every panel query run.

// grafanaEnv is how the test plays Grafana: the built-in variables. The
// scrape interval of the test's Prometheus is 1s; as Grafana does,
// $__rate_interval is max($__interval + scrape interval, 4 * scrape interval).
var grafanaBuiltins = map[string]string{
	"__interval":      "5s",
	"__interval_ms":   "5000",
	"__rate_interval": "6s",
	"__range":         "1h",
	"__range_s":       "3600",
	"__range_ms":      "3600000",
}

// dashboard is the part of a Grafana dashboard JSON the test reads.
type dashboard struct {
	file       string
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Panels  []panel  `json:"panels"` // collapsed rows
	Targets []target `json:"targets"`
}

type target struct {
	RefID      string          `json:"refId"`
	Expr       string          `json:"expr"`
	Datasource json.RawMessage `json:"datasource"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": "..."} in newer Grafana
	Definition string          `json:"definition"`
	Regex      string          `json:"regex"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value json.RawMessage `json:"value"` // a string or a list of strings
	} `json:"current"`
	Options []struct {
		Value string `json:"value"`
	} `json:"options"`
}

// queryText returns the variable's query, whichever form it has.
func (v *variable) queryText() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil && s != "" {
		return s
	}
	var obj struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &obj) == nil && obj.Query != "" {
		return obj.Query
	}
	return v.Definition
}

// currentValues returns the values of the variable's saved selection.
func (v *variable) currentValues() []string {
	var s string
	if json.Unmarshal(v.Current.Value, &s) == nil {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	var l []string
	_ = json.Unmarshal(v.Current.Value, &l) // a value of another shape reads as empty
	return l
}

// loadDashboards reads every dashboard JSON file under dir (recursively).
// Files that are not dashboards (no panels) are ignored; a dashboard may
// also be wrapped as {"dashboard": {...}} (the API's form).
func loadDashboards(t *testing.T, dir string) []dashboard {
	t.Helper()
	var out []dashboard
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var wrapped struct {
			Dashboard *dashboard `json:"dashboard"`
		}
		var db dashboard
		if json.Unmarshal(b, &wrapped) == nil && wrapped.Dashboard != nil && len(wrapped.Dashboard.Panels) > 0 {
			db = *wrapped.Dashboard
		} else if err := json.Unmarshal(b, &db); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if len(db.Panels) == 0 {
			return nil
		}
		db.file = p
		out = append(out, db)
		return nil
	})
	if err != nil {
		t.Fatalf("reading dashboards: %v", err)
	}
	return out
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// isPrometheus reports whether a target's datasource is Prometheus (or
// unset/templated, which in these dashboards means $datasource).
func (tg *target) isPrometheus() bool {
	if len(tg.Datasource) == 0 || string(tg.Datasource) == "null" {
		return true
	}
	var ds struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	if json.Unmarshal(tg.Datasource, &ds) != nil {
		var name string
		_ = json.Unmarshal(tg.Datasource, &name) // a value of another shape reads as empty
		return name == "" || strings.HasPrefix(name, "$") || strings.Contains(strings.ToLower(name), "prometheus")
	}
	return ds.Type == "" || ds.Type == "prometheus"
}

// varRef matches $name, ${name}, ${name:format} and [[name]] / [[name:format]].
var varRef = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)(?::(\w+))?\]\]`)

// resolved is the value a variable takes: its values, and whether Grafana
// would render it as a multi-value (regex) variable.
type resolved struct {
	values []string
	multi  bool
	all    string // the allValue when "All" is selected and custom
}

// interpolate substitutes the variables in expr as Grafana's Prometheus
// datasource does: single values as they are, multi-value and "All"
// selections as a regex alternation of regex-escaped values, and the
// :raw, :regex, :pipe, :csv formats.
func interpolate(expr string, vars map[string]resolved) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name, format := sub[1]+sub[3]+sub[4], sub[2]+sub[5]
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		r, ok := vars[name]
		if !ok {
			if strings.Trim(name, "0123456789") != "" { // $1 of label_replace is no variable
				missing = append(missing, m)
			}
			return m
		}
		if r.all != "" && format == "" {
			return r.all
		}
		switch format {
		case "raw":
			return strings.Join(r.values, ",")
		case "csv":
			return strings.Join(r.values, ",")
		case "pipe":
			return strings.Join(r.values, "|")
		case "regex":
			return regexAlternation(r.values)
		case "":
		default:
			missing = append(missing, m+" (unsupported format)")
			return m
		}
		if !r.multi {
			if len(r.values) == 0 {
				return ""
			}
			return promStringEscape(r.values[0])
		}
		if len(r.values) == 1 {
			return promRegexEscape(r.values[0])
		}
		return regexAlternation(r.values)
	})
	if len(missing) > 0 {
		return out, fmt.Errorf("unknown template variables %v", missing)
	}
	return out, nil
}

func regexAlternation(values []string) string {
	esc := make([]string, len(values))
	for i, v := range values {
		esc[i] = promRegexEscape(v)
	}
	return "(" + strings.Join(esc, "|") + ")"
}

// promStringEscape is Grafana's prometheusRegularEscape.
func promStringEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\\'`).Replace(s)
}

// promRegexEscape is Grafana's prometheusSpecialRegexEscape: regex
// metacharacters escaped with a backslash that survives PromQL's string
// unquoting.
func promRegexEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\\\`)
		case strings.ContainsRune(`$^*{}[]'+?.()|`, c):
			b.WriteString(`\\`)
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

var labelValuesCall = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*)\s*,\s*)?(\w+)\s*\)\s*$`)

// resolveVariables gives each template variable of d the value Grafana
// would: query variables run against Prometheus (label_values), custom and
// interval variables from their options, the saved selection when it is
// among the values, "All" when the variable offers it and nothing else is
// saved, the first value otherwise. It also returns, for each single-value
// variable, the other values a user could pick.
func resolveVariables(p prom, d *dashboard) (map[string]resolved, map[string][]string, error) {
	vars := map[string]resolved{}
	others := map[string][]string{}
	for i := range d.Templating.List {
		v := &d.Templating.List[i]
		var values []string
		switch v.Type {
		case "datasource":
			vars[v.Name] = resolved{values: []string{"prometheus"}}
			continue
		case "adhoc":
			continue
		case "query":
			q, err := interpolate(v.queryText(), vars)
			if err != nil {
				return nil, nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
			if values, err = labelValues(p, q); err != nil {
				return nil, nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
			if values, err = filterRegex(values, v.Regex); err != nil {
				return nil, nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
		case "custom", "interval":
			for _, o := range strings.Split(v.queryText(), ",") {
				o = strings.TrimSpace(o)
				if _, val, ok := strings.Cut(o, " : "); ok { // "text : value"
					o = strings.TrimSpace(val)
				}
				if o != "" {
					values = append(values, o)
				}
			}
		case "constant", "textbox":
			values = []string{v.queryText()}
		default:
			return nil, nil, fmt.Errorf("variable %s: type %q not supported by the test", v.Name, v.Type)
		}
		if len(values) == 0 && v.IncludeAll && v.AllValue != "" {
			// Grafana offers All alone, e.g. the cluster variable of a
			// Prometheus without that label: its allValue matches them all.
			vars[v.Name] = resolved{multi: true, all: v.AllValue}
			continue
		}
		if len(values) == 0 {
			return nil, nil, fmt.Errorf("variable %s (%s %q) has no value in Prometheus", v.Name, v.Type, v.queryText())
		}
		r := resolved{multi: v.Multi || v.IncludeAll}
		cur := v.currentValues()
		switch {
		case v.IncludeAll && (len(cur) == 0 || slices.Contains(cur, "$__all")):
			r.values = values
			r.all = v.AllValue
		case len(cur) > 0 && allIn(cur, values):
			r.values = cur
		default:
			r.values = values[:1]
		}
		vars[v.Name] = r
		if !r.multi {
			others[v.Name] = slices.DeleteFunc(slices.Clone(values), func(x string) bool { return x == r.values[0] })
		}
	}
	return vars, others, nil
}

func allIn(xs, set []string) bool {
	for _, x := range xs {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// labelValues answers label_values(selector, label) and label_values(label).
func labelValues(p prom, q string) ([]string, error) {
	m := labelValuesCall.FindStringSubmatch(q)
	if m == nil {
		return nil, fmt.Errorf("query %q: only label_values(...) is supported by the test", q)
	}
	u := p.base + "/api/v1/label/" + url.PathEscape(m[2]) + "/values"
	if sel := strings.TrimSpace(m[1]); sel != "" {
		u += "?match[]=" + url.QueryEscape(sel)
	}
	var out struct {
		Data []string `json:"data"`
	}
	if err := getJSON(context.Background(), u, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// filterRegex applies a variable's regex as Grafana does: keep matching
// values, or the first capture group when there is one.
func filterRegex(values []string, re string) ([]string, error) {
	if re == "" {
		return values, nil
	}
	if strings.HasPrefix(re, "/") {
		re = re[1:strings.LastIndex(re, "/")]
	}
	rx, err := regexp.Compile(re)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range values {
		m := rx.FindStringSubmatch(v)
		switch {
		case m == nil:
		case len(m) > 1:
			out = append(out, m[1])
		default:
			out = append(out, v)
		}
	}
	return out, nil
}

// checkDashboards runs every panel query of every dashboard under dir and
// reports the ones that return no data. It returns how many it ran.
func checkDashboards(t *testing.T, p prom, dir string) int {
	t.Helper()
	dashboards := loadDashboards(t, dir)
	queries := 0
	for i := range dashboards {
		d := &dashboards[i]
		vars, others, err := resolveVariables(p, d)
		if err != nil {
			t.Errorf("%s (%s): %v", d.file, d.Title, err)
			continue
		}
		for _, pn := range allPanels(d.Panels) {
			for _, tg := range pn.Targets {
				if tg.Expr == "" || !tg.isPrometheus() {
					continue
				}
				queries++
				where := fmt.Sprintf("%s: panel %q, query %s", filepath.Base(d.file), pn.Title, tg.RefID)
				if err := queryHasData(p, tg.Expr, vars, others); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			}
		}
	}
	if len(dashboards) > 0 && queries == 0 {
		t.Errorf("%d dashboards under %s but no Prometheus query in their panels", len(dashboards), dir)
	}
	return queries
}

// queryHasData runs expr with the variables' values and, when that returns
// nothing, with each other value of each single-value variable in turn (a
// panel about locks held by a dead conductor is empty for an alive one): one
// choice must return data.
func queryHasData(p prom, expr string, vars map[string]resolved, others map[string][]string) error {
	try := func(vars map[string]resolved) (bool, string, error) {
		q, err := interpolate(expr, vars)
		if err != nil {
			return false, q, err
		}
		res, err := p.query(q)
		if err != nil {
			return false, q, err
		}
		return !res.empty(), q, nil
	}
	ok, first, err := try(vars)
	if err != nil || ok {
		if err != nil {
			return fmt.Errorf("%w\n  expr: %s", err, first)
		}
		return nil
	}
	names := make([]string, 0, len(others))
	for name := range others {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !varRef.MatchString(expr) || !strings.Contains(expr, name) {
			continue
		}
		for _, v := range others[name] {
			alt := maps.Clone(vars)
			alt[name] = resolved{values: []string{v}}
			if ok, q, err := try(alt); err != nil {
				return fmt.Errorf("%w\n  expr: %s", err, q)
			} else if ok {
				return nil
			}
		}
	}
	return fmt.Errorf("returns no data, whatever the variables' values\n  expr: %s", first)
}

// TestInterpolate pins the Grafana substitution rules the test relies on.
func TestInterpolate(t *testing.T) {
	vars := map[string]resolved{
		"job":      {values: []string{"ironic-conductor-exporter"}, multi: true},
		"instance": {values: []string{"127.0.0.1:10067", "10.0.0.1:10067"}, multi: true},
		"hostname": {values: []string{"c1.example.com"}},
		"group":    {values: []string{"a", "b"}, multi: true, all: ".*"},
	}
	for _, tc := range []struct{ in, want string }{
		{`up{job=~"$job"}`, `up{job=~"ironic-conductor-exporter"}`},
		{`up{instance=~"${instance}"}`, `up{instance=~"(127\\.0\\.0\\.1:10067|10\\.0\\.0\\.1:10067)"}`},
		{`x{hostname="$hostname"}`, `x{hostname="c1.example.com"}`},
		{`x{hostname=~"[[hostname]]"}`, `x{hostname=~"c1.example.com"}`},
		{`x{g=~"$group"}`, `x{g=~".*"}`},
		{`x{g=~"${group:pipe}"}`, `x{g=~"a|b"}`},
		{`rate(x[$__rate_interval]) + increase(y[$__range]) + z[$__interval]`, `rate(x[6s]) + increase(y[1h]) + z[5s]`},
	} {
		got, err := interpolate(tc.in, vars)
		if err != nil || got != tc.want {
			t.Errorf("interpolate(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if got, err := interpolate(`label_replace(x, "h", "$1", "i", "(.*):.*")`, vars); err != nil || !strings.Contains(got, `"$1"`) {
		t.Errorf("label_replace's $1 must stay: %s, %v", got, err)
	}
	if _, err := interpolate(`x{a="$nope"}`, vars); err == nil {
		t.Error("an unknown variable must be an error")
	}
}
