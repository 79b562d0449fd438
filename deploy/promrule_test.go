package deploy

import (
	"bytes"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

func ruleFilesOrSkip(t *testing.T) []string {
	t.Helper()
	files, err := RuleFiles(filepath.Join(root, AlertsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("alerts/ has no *.rules.yml yet: nothing to generate")
	}
	return files
}

// TestPrometheusRuleUpToDate: the committed PrometheusRule is byte for byte
// what `go generate ./mixin` makes of alerts/ now.
func TestPrometheusRuleUpToDate(t *testing.T) {
	ruleFilesOrSkip(t)
	want, err := RenderPrometheusRule(filepath.Join(root, AlertsDir))
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, PrometheusRulePath))
	if err != nil {
		t.Fatalf("%v: run go generate ./mixin", err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is out of date with %s: run go generate ./mixin\n%s", PrometheusRulePath, AlertsDir,
			cmp.Diff(string(want), string(have)))
	}
}

// TestPrometheusRuleMatchesAlerts compares meaning rather than bytes: the
// PrometheusRule, decoded strictly as the CRD type, carries exactly the groups
// (names, intervals, rules, expressions, durations, labels, annotations) of
// the rule files.
func TestPrometheusRuleMatchesAlerts(t *testing.T) {
	files := ruleFilesOrSkip(t)
	groups, err := LoadRuleGroups(files)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeFile(t, filepath.Join(root, PrometheusRulePath))
	if len(objs) != 1 {
		t.Fatalf("%d objects in %s", len(objs), PrometheusRulePath)
	}
	pr, ok := objs[0].(*monitoringv1.PrometheusRule)
	if !ok {
		t.Fatalf("%s holds a %T", PrometheusRulePath, objs[0])
	}
	if diff := cmp.Diff(groups, pr.Spec.Groups); diff != "" {
		t.Errorf("PrometheusRule groups differ from %s (-alerts +PrometheusRule):\n%s", AlertsDir, diff)
	}
	var n int
	for _, g := range groups {
		n += len(g.Rules)
	}
	if n == 0 {
		t.Error("no rules")
	}
}

// TestPrometheusRuleIsValidRuleFile: the spec of the PrometheusRule, written
// back as a rule file, passes promtool (when installed: Debian's prometheus
// package, which make provision installs).
func TestPrometheusRuleIsValidRuleFile(t *testing.T) {
	ruleFilesOrSkip(t)
	testenv.Need(t, testenv.Promtool)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeFile(t, filepath.Join(root, PrometheusRulePath))
	pr := objs[0].(*monitoringv1.PrometheusRule)
	b, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "spec.rules.yml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

// TestLoadRuleGroupsRejects: what a PrometheusRule cannot hold is an error,
// not a silent loss.
func TestLoadRuleGroupsRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("a.rules.yml", "groups:\n- name: a\n  rules:\n  - alert: A\n    expr: up == 0\n")
	for name, tc := range map[string]struct {
		content, want string
	}{
		"unknown field":   {"groups:\n- name: b\n  rules:\n  - alert: B\n    expr: up == 0\n    severity: page\n", "unknown field"},
		"duplicate group": {"groups:\n- name: a\n  rules:\n  - alert: B\n    expr: up == 0\n", `"a" is also in`},
		"no groups":       {"groups: []\n", "no rule groups"},
		"empty group":     {"groups:\n- name: c\n  rules: []\n", "has no rules"},
		"unnamed group":   {"groups:\n- rules:\n  - alert: B\n    expr: up == 0\n", "has no name"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := write("b.rules.yml", tc.content)
			_, err := LoadRuleGroups([]string{ok, bad})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := RenderPrometheusRule(t.TempDir()); err == nil {
		t.Error("an empty alerts directory rendered a PrometheusRule")
	}
}
