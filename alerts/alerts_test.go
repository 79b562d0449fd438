// Package alerts holds the Prometheus alerting rules of
// ironic-conductor-exporter and an example Alertmanager configuration. Its
// tests run them through the real tools: promtool (Debian prometheus) and
// amtool (Debian prometheus-alertmanager). A missing tool fails the tests; it
// never skips them.
package alerts

import (
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

const (
	rulesFile = "ironic-conductor-exporter.rules.yml"
	amFile    = "alertmanager.example.yml"
	runbook   = "../docs/runbook.md"
	// job is the job label value every selector of the rules carries.
	job         = "ironic-conductor-exporter"
	runbookBase = "https://github.com/ironic-conductor-exporter/ironic-conductor-exporter/blob/v0.1.0/docs/runbook.md#"
)

// tool returns the path of a command-line tool (promtool or amtool), or
// skips the test saying what to install (fails it under
// ICE_TEST_REQUIRE_ALL=1).
func tool(t *testing.T, dep testenv.Dep) string {
	t.Helper()
	testenv.Need(t, dep)
	p, err := exec.LookPath(dep.Name())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ruleFile is the part of a Prometheus rule file the tests look at.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

// rule is one alerting rule.
type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) (ruleFile, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	group := map[string]string{} // alert -> group
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: recording rule %q: this file holds alerts only", g.Name, r.Record)
				continue
			}
			if _, dup := group[r.Alert]; dup {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			group[r.Alert] = g.Name
		}
	}
	return f, group
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := tool(t, testenv.Promtool)
	out := run(t, promtool, "check", "rules", rulesFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules:\n%s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := tool(t, testenv.Promtool)
	files, _ := filepath.Glob("tests/*.yml")
	if len(files) == 0 {
		t.Fatal("no rule tests in alerts/tests/")
	}
	// One invocation per file, so that a failure names its file.
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			run(t, promtool, "test", "rules", f)
		})
	}
}

// TestRuleConventions checks what promtool does not: severities, the three
// annotations, the runbook anchors and the job selector.
func TestRuleConventions(t *testing.T) {
	f, _ := loadRules(t)
	anchors := runbookAnchors(t)
	metric := regexp.MustCompile(`\b(ironic_[a-z_]+|up)\b(\{[^}]*\})?`)
	template := regexp.MustCompile(`\{\{.*\}\}`)
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
			}
			var keys []string
			for k := range r.Annotations {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if want := []string{"description", "runbook_url", "summary"}; !slices.Equal(keys, want) {
				t.Errorf("%s: annotations %v, want %v", r.Alert, keys, want)
			}
			if s := r.Annotations["summary"]; s == "" || template.MatchString(s) {
				t.Errorf("%s: summary %q must be fixed text", r.Alert, s)
			}
			if d := r.Annotations["description"]; !strings.Contains(d, "{{ $labels.") && !strings.Contains(d, "{{ $value") {
				t.Errorf("%s: description %q uses neither $labels nor $value", r.Alert, d)
			}
			anchor := strings.ToLower(r.Alert)
			if u := r.Annotations["runbook_url"]; u != runbookBase+anchor {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, u, runbookBase+anchor)
			}
			if !anchors[anchor] {
				t.Errorf("%s: docs/runbook.md has no section #%s", r.Alert, anchor)
			}
			for _, m := range metric.FindAllStringSubmatch(r.Expr, -1) {
				if !strings.Contains(m[2], `job="`+job+`"`) {
					t.Errorf("%s: selector %q lacks job=%q", r.Alert, m[0], job)
				}
			}
		}
	}
}

// TestJobRewrite proves the documented way of using another job name: one
// textual substitution gives valid rules that no longer name the default.
func TestJobRewrite(t *testing.T) {
	promtool := tool(t, testenv.Promtool)
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	out := rewriteJob(string(b), "ironic-prod")
	if strings.Contains(out, `job="`+job+`"`) {
		t.Error("the rewrite left the default job selector behind")
	}
	p := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, promtool, "check", "rules", p)
	if n, m := strings.Count(string(b), `job="`+job+`"`), strings.Count(out, `job="ironic-prod"`); n == 0 || n != m {
		t.Errorf("rewrite changed %d of %d selectors", m, n)
	}
}

// rewriteJob is the substitution alerts/README.md documents (as sed).
func rewriteJob(rules, to string) string {
	return strings.ReplaceAll(rules, `job="`+job+`"`, `job="`+to+`"`)
}

// ruleTests is the part of a promtool test file the tests look at.
type ruleTests struct {
	Tests []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertIsTested requires, for every alert, a test named "<alert>
// fires when ..." that expects it with its full labels and annotations, a
// test named "<alert> does not fire ...", and, for the alerts about
// conductors, nodes and rings, a place in the test that ironic_up == 0
// silences them.
func TestEveryAlertIsTested(t *testing.T) {
	f, group := loadRules(t)
	files, _ := filepath.Glob("tests/*.yml")
	fires, quiet, silenced := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rt ruleTests
		if err := yaml.Unmarshal(b, &rt); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tg := range rt.Tests {
			alert, rest, _ := strings.Cut(tg.Name, " ")
			switch {
			case strings.HasPrefix(rest, "fires when "):
				for _, at := range tg.AlertRuleTest {
					for _, ea := range at.ExpAlerts {
						if at.Alertname == alert && fullAlert(ea.ExpLabels, ea.ExpAnnotations) {
							fires[alert] = true
						}
					}
				}
			case strings.HasPrefix(rest, "does not fire "):
				quiet[alert] = true
			}
			if filepath.Base(p) == "silenced-while-database-unreachable.yml" {
				for _, at := range tg.AlertRuleTest {
					silenced[at.Alertname] = true
				}
			}
		}
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf(`%s: no test "%[1]s fires when ..." expecting it with labels and all annotations`, r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf(`%s: no test "%[1]s does not fire ..."`, r.Alert)
			}
			if group[r.Alert] != "ironic-conductor-exporter.exporter" && !silenced[r.Alert] {
				t.Errorf("%s: not in tests/silenced-while-database-unreachable.yml", r.Alert)
			}
		}
	}
}

func fullAlert(labels, annotations map[string]string) bool {
	return labels["alertname"] != "" && labels["severity"] != "" && labels["job"] != "" &&
		annotations["summary"] != "" && annotations["description"] != "" && annotations["runbook_url"] != ""
}

// runbookAnchors returns the GitHub anchors of the headings of the runbook.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(runbook)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return anchors
}

// TestRunbookCoversEveryAlert: each alert has its section, and each alert
// section of the runbook has its alert.
func TestRunbookCoversEveryAlert(t *testing.T) {
	_, group := loadRules(t)
	b, err := os.ReadFile(runbook)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## Ironic"); ok {
			if _, known := group["Ironic"+strings.TrimSpace(h)]; !known {
				t.Errorf("docs/runbook.md: section %q names no alert", strings.TrimPrefix(line, "## "))
			}
		}
	}
}

func TestAlertmanagerCheckConfig(t *testing.T) {
	amtool := tool(t, testenv.Amtool)
	out := run(t, amtool, "check-config", amFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("amtool check-config:\n%s", out)
	}
}

// TestAlertmanagerRoutes sends label sets through the routing tree.
func TestAlertmanagerRoutes(t *testing.T) {
	amtool := tool(t, testenv.Amtool)
	f, _ := loadRules(t)
	cases := []struct {
		labels []string
		want   string
	}{
		{[]string{"alertname=IronicConductorDown", "severity=critical", "hostname=cond-1", "conductor_group=rack-1"}, "ironic-critical"},
		{[]string{"alertname=IronicExporterDatabaseUnreachable", "severity=critical", "instance=exporter-a:10067"}, "ironic-critical"},
		{[]string{"alertname=IronicConductorHeartbeatStale", "severity=warning", "hostname=cond-1"}, "ironic-warning"},
		{[]string{"alertname=IronicExporterDown", "severity=warning"}, "ironic-warning"},
		{[]string{"alertname=IronicHashRingChurn", "severity=info", "conductor_group=rack-1"}, "ironic-info"},
		// an alert without a severity still reaches someone
		{[]string{"alertname=SomethingElse"}, "ironic-warning"},
	}
	// and every alert of the rules goes where its severity says
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			cases = append(cases, struct {
				labels []string
				want   string
			}{[]string{"alertname=" + r.Alert, "severity=" + r.Labels["severity"]}, "ironic-" + r.Labels["severity"]})
		}
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.labels, ","), func(t *testing.T) {
			args := append([]string{"config", "routes", "test", "--config.file=" + amFile, "--verify.receivers=" + tc.want}, tc.labels...)
			out, err := exec.Command(amtool, args...).CombinedOutput()
			if err != nil {
				t.Errorf("amtool %s: %v (want receiver %s)\n%s", strings.Join(args, " "), err, tc.want, out)
			}
		})
	}
}
