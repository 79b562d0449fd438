package mixin

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
	yaml "go.yaml.in/yaml/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

var root = func() string {
	r, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	return r
}()

func promtool(t *testing.T) string {
	t.Helper()
	testenv.Need(t, testenv.Promtool)
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found in PATH: install Debian's prometheus package (make provision does)")
	}
	return p
}

// TestGeneratedFilesUpToDate: every file generated from the mixin is, byte
// for byte, what `go generate ./mixin` writes now.
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Errorf("%v: run go generate ./mixin", err)
			continue
		}
		if !bytes.Equal(have, f.Data) {
			t.Errorf("%s is out of date with mixin/: run go generate ./mixin\n%s", f.Path, cmp.Diff(string(f.Data), string(have)))
		}
	}
	if len(files) < 5 {
		t.Errorf("%d generated files, want rules, Kolla rules, scrape snippet and dashboards", len(files))
	}
}

// custom is a _config unlike the default in every setting the brief names.
const custom = `{
  jobName: 'ironic-prod',
  selector: 'job="ironic-prod", namespace="openstack"',
  clusterLabel: 'region',
  replicaLabels: ['instance', 'pod', 'replica'],
  runbookURLBase: 'https://wiki.example.com/ironic/runbook#',
  'for'+: { IronicConductorDown: '3m', IronicExporterDown: '10m', IronicExporterAbsent: '1h' },
  flappingWindow: '1h',
}`

// TestCustomConfig renders the mixin with a non-default _config and checks
// that every setting reached every rule, and that promtool accepts the
// result.
func TestCustomConfig(t *testing.T) {
	r, err := Render(root, custom)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Render(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, g := range r.Alerts.Groups {
		for _, rule := range g.Rules {
			n++
			if want := "https://wiki.example.com/ironic/runbook#" + strings.ToLower(rule.Alert); rule.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", rule.Alert, rule.Annotations["runbook_url"], want)
			}
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(rule.Expr)
			if err != nil {
				t.Errorf("%s: %v", rule.Alert, err)
				continue
			}
			for _, sel := range parser.ExtractSelectors(expr) {
				s := map[string]string{}
				for _, m := range sel {
					s[m.Name] = m.Value
				}
				if s["job"] != "ironic-prod" || s["namespace"] != "openstack" {
					t.Errorf("%s: selector %v lacks the configured selector", rule.Alert, sel)
				}
			}
			if strings.Contains(rule.Expr, "ironic-conductor-exporter") {
				t.Errorf("%s: the default job is left in %q", rule.Alert, rule.Expr)
			}
			if strings.HasPrefix(rule.Alert, "IronicConductor") || strings.HasPrefix(rule.Alert, "IronicNode") || strings.HasPrefix(rule.Alert, "IronicHashRing") {
				if !strings.Contains(rule.Expr, "region") || !strings.Contains(rule.Expr, "replica") {
					t.Errorf("%s: the cluster or replica labels are not in %q", rule.Alert, rule.Expr)
				}
				if strings.Contains(rule.Expr, "cluster") {
					t.Errorf("%s: the default cluster label is left in %q", rule.Alert, rule.Expr)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no rules")
	}
	want := map[string]string{"IronicConductorDown": "3m", "IronicExporterDown": "10m", "IronicExporterAbsent": "1h", "IronicNodesWithoutConductor": "5m"}
	descs := map[string]string{"IronicExporterDown": "for more than 10 minutes", "IronicExporterAbsent": "for 1 hour", "IronicConductorFlapping": "in the last hour"}
	for _, g := range r.Alerts.Groups {
		for _, rule := range g.Rules {
			if w, ok := want[rule.Alert]; ok && rule.For != w {
				t.Errorf("%s: for %q, want %q", rule.Alert, rule.For, w)
			}
			if d, ok := descs[rule.Alert]; ok && !strings.Contains(rule.Annotations["description"], d) {
				t.Errorf("%s: description %q does not say %q", rule.Alert, rule.Annotations["description"], d)
			}
		}
	}
	if r.Config.JobName != "ironic-prod" || def.Config.JobName != "ironic-conductor-exporter" {
		t.Errorf("jobName %q / default %q", r.Config.JobName, def.Config.JobName)
	}

	b, err := r.RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "custom.rules.yml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", p).CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}

	// The dashboards follow the cluster label.
	for name, d := range r.Dashboards {
		s := string(d)
		if strings.Contains(s, `cluster=~\"$cluster\"`) || !strings.Contains(s, `region=~\"$cluster\"`) {
			t.Errorf("%s: the cluster matcher does not use the configured label", name)
		}
		if !strings.Contains(s, "label_values(ironic_up, region)") {
			t.Errorf("%s: the cluster variable does not list the configured label", name)
		}
	}
}

// TestCustomConfigPromtoolTestRules: the custom rendering passes the
// replica-pair tests once their series carry the custom labels.
func TestCustomConfigPromtoolTestRules(t *testing.T) {
	r, err := Render(root, `{jobName: 'ironic-prod', clusterLabel: 'region', runbookURLBase: 'https://wiki.example.com/rb#'}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(root, "alerts", "tests", "replica-pairs.yml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(tests), "ironic-conductor-exporter.rules.yml", "custom.rules.yml")
	s = strings.ReplaceAll(s, `job="ironic-conductor-exporter"`, `job="ironic-prod"`)
	s = strings.ReplaceAll(s, "job: ironic-conductor-exporter", "job: ironic-prod")
	s = strings.ReplaceAll(s, `cluster="`, `region="`)
	s = regexp.MustCompile(`(?m)^(\s+)cluster: `).ReplaceAllString(s, "${1}region: ")
	s = strings.ReplaceAll(s, "https://github.com/ironic-conductor-exporter/ironic-conductor-exporter/blob/v0.1.0/docs/runbook.md#", "https://wiki.example.com/rb#")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "custom.rules.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "t.yml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "test", "rules", filepath.Join(dir, "tests", "t.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules with a custom _config: %v\n%s", err, out)
	}
}

// TestDashboardsMatchGo: with the default _config the mixin's dashboards
// are the Go-generated JSON of dashboards/, and its cluster label is the
// one they use.
func TestDashboardsMatchGo(t *testing.T) {
	r, err := Render(root, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dashboards) == 0 {
		t.Fatal("no dashboards")
	}
	for name, d := range r.Dashboards {
		b, err := os.ReadFile(filepath.Join(root, "dashboards", name))
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: mixin and dashboards/ differ:\n%s", name, diff)
		}
		if !strings.Contains(string(b), r.Config.ClusterLabel+`=~\"$cluster\"`) {
			t.Errorf("%s does not select %s=~\"$cluster\" (_config.clusterLabel)", name, r.Config.ClusterLabel)
		}
	}
}

// TestKollaRulesSurviveJinja: the Kolla rules file, as copied (Kolla) and as
// templated with Jinja2 the way Ansible's template module does (Kayobe;
// trim_blocks on, and off), is the same rule file as alerts/.
func TestKollaRulesSurviveJinja(t *testing.T) {
	kolla, err := os.ReadFile(filepath.Join(root, KollaRulesPath))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(filepath.Join(root, RulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := yaml.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	variants := map[string][]byte{"copied": kolla}
	for _, trim := range []string{"True", "False"} {
		variants["jinja trim_blocks="+trim] = jinja(t, kolla, trim)
	}
	for name, b := range variants {
		var got any
		if err := yaml.Unmarshal(b, &got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: differs from %s:\n%s", name, RulesPath, diff)
		}
		if name != "copied" && bytes.Contains(b, []byte("raw %}")) {
			t.Errorf("%s: raw tags left", name)
		}
	}
	// Without the raw block, Jinja would fail on the Prometheus templates:
	// the wrapping is what makes it safe.
	cmd := exec.Command(python(t), "-c", `import sys, jinja2; jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(sys.stdin.read()).render()`)
	cmd.Stdin = bytes.NewReader(plain)
	if err := cmd.Run(); err == nil {
		t.Error("the bare rules render under Jinja2: the test cannot tell the raw block matters")
	}
}

// python returns the Python with python3-jinja2, or skips t saying what
// to install (fails it under ICE_TEST_REQUIRE_ALL=1).
func python(t *testing.T) string {
	t.Helper()
	testenv.Need(t, testenv.Jinja2)
	py, err := testenv.Python()
	if err != nil {
		t.Fatal(err)
	}
	return py
}

// jinja renders b with python3-jinja2 as Ansible's template module does
// (trim_blocks, undefined variables an error).
func jinja(t *testing.T, b []byte, trimBlocks string) []byte {
	t.Helper()
	cmd := exec.Command(python(t), "-c", `import sys, jinja2
env = jinja2.Environment(trim_blocks=`+trimBlocks+`, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
sys.stdout.write(env.from_string(sys.stdin.read()).render())`)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3-jinja2: %v\n%s", err, stderr.String())
	}
	return out
}
