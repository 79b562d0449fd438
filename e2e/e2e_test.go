// Package e2e proves the alerting path end to end: the sidecar reads a real
// PostgreSQL database holding Ironic's schema (made by Ironic's own
// migrations, scripts/ironic-schema.sh), a real Prometheus scrapes it every
// second and evaluates the project's alerting rules, a real Alertmanager
// runs the project's example configuration, and a webhook receiver run by
// the test gets the notification. The sidecar reads Nova's databases too
// (SQLite files, nova_fixture_test.go). Every query of the Grafana
// dashboards in dashboards/ is run against that Prometheus and must return
// data.
//
// Needs: PostgreSQL on 127.0.0.1:5432 with trust authentication (or
// ICE_TEST_PG / ICE_TEST_PG_URL), Debian's python3-ironic and
// python3-psycopg2 (the schema), prometheus and prometheus-alertmanager.
// make provision installs them. Missing tools fail the test; it never skips.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"
	yaml "go.yaml.in/yaml/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

const (
	rulesFile     = "../alerts/ironic-conductor-exporter.rules.yml"
	amConfigFile  = "../alerts/alertmanager.example.yml"
	dashboardsDir = "../dashboards"
	// job is the job name the rules select; the test's Prometheus uses it.
	job = "ironic-conductor-exporter"
	// heartbeatTimeout is Ironic's heartbeat_timeout in the test, so that a
	// conductor dies in seconds.
	heartbeatTimeout = 3 * time.Second
	// downFor replaces the `for:` of IronicConductorDown in the test's copy
	// of the rules: long enough to see the alert pending.
	downFor = "3s"
)

var (
	exporterBin, prometheusBin, alertmanagerBin string

	testIronicDB *testenv.IronicDB
	dbName       string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
		return 1
	}
	if code, missing := testenv.ExitMissing("e2e", testenv.PostgreSQL, testenv.IronicPython, testenv.Prometheus, testenv.Alertmanager); missing {
		return code
	}
	var err error
	if prometheusBin, err = exec.LookPath("prometheus"); err != nil {
		return fail("prometheus not found in PATH: install Debian's prometheus package (make provision does)")
	}
	// Debian names the binary prometheus-alertmanager; upstream alertmanager.
	if alertmanagerBin, err = exec.LookPath("prometheus-alertmanager"); err != nil {
		if alertmanagerBin, err = exec.LookPath("alertmanager"); err != nil {
			return fail("alertmanager not found in PATH: install Debian's prometheus-alertmanager package (make provision does)")
		}
	}

	var cleanup func()
	if exporterBin, testIronicDB, _, cleanup, err = testenv.Setup("ice_e2e_test"); err != nil {
		return fail("%v", err)
	}
	defer cleanup()
	dbName = testIronicDB.Name
	return m.Run()
}

// ruleFile is a Prometheus rule file, kept generic so that a copy can be
// written back with every field the test does not touch intact.
type ruleFile struct {
	Groups []struct {
		Name  string          `yaml:"name"`
		Rules []yaml.MapSlice `yaml:"rules"`
	} `yaml:"groups"`
}

func field(m yaml.MapSlice, key string) string {
	for _, it := range m {
		if it.Key == key {
			s, _ := it.Value.(string)
			return s
		}
	}
	return ""
}

// testRules returns the project's rules with the `for:` of alert set to
// forDuration, and the alert's annotations as written in the file.
func testRules(t *testing.T, alert, forDuration string) ([]byte, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var annotations map[string]string
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			if field(r, "alert") != alert {
				continue
			}
			set := false
			for j := range r {
				switch r[j].Key {
				case "for":
					r[j].Value, set = forDuration, true
				case "annotations":
					out, _ := yaml.Marshal(r[j].Value)
					_ = yaml.Unmarshal(out, &annotations) // a value of another shape reads as empty
				}
			}
			if !set {
				r = append(r, yaml.MapItem{Key: "for", Value: forDuration})
			}
			g.Rules[i] = r
		}
	}
	if annotations == nil {
		t.Fatalf("%s has no alert %s", rulesFile, alert)
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return out, annotations
}

// receiverHost is the host of every receiver URL in the example
// Alertmanager configuration; the test points it at its webhook server.
var receiverHost = regexp.MustCompile(`http://alert-receiver\.example:9095`)

// testAlertmanagerConfig returns the example configuration with its
// receivers pointed at webhookURL and its group waits shortened.
func testAlertmanagerConfig(t *testing.T, webhookURL string) []byte {
	t.Helper()
	b, err := os.ReadFile(amConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if !receiverHost.Match(b) {
		t.Fatalf("%s: no receiver URL on http://alert-receiver.example:9095 to point at the test's webhook", amConfigFile)
	}
	b = receiverHost.ReplaceAll(b, []byte(webhookURL))
	b = regexp.MustCompile(`(?m)^(\s*group_wait:).*$`).ReplaceAll(b, []byte("${1} 1s"))
	b = regexp.MustCompile(`(?m)^(\s*group_interval:).*$`).ReplaceAll(b, []byte("${1} 1s"))
	return b
}

// webhookMessage is Alertmanager's webhook payload (version 4).
type webhookMessage struct {
	path     string
	Version  string `json:"version"`
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	Alerts   []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
}

// webhook is the receiver the test runs.
type webhook struct {
	mu       sync.Mutex
	messages []webhookMessage
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m webhookMessage
	if err := json.Unmarshal(b, &m); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	m.path = r.URL.Path
	w.mu.Lock()
	w.messages = append(w.messages, m)
	w.mu.Unlock()
}

func (w *webhook) received() []webhookMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]webhookMessage(nil), w.messages...)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAlertingPath: database -> sidecar -> Prometheus (rules, dashboards)
// -> Alertmanager (routes, inhibitions) -> webhook.
func TestAlertingPath(t *testing.T) {
	started := time.Now()
	d := testIronicDB.DB(t)
	loadFixture(t, d)
	hb := startHeartbeats(t, d, 500*time.Millisecond, beating)

	// The receiver, Alertmanager, the sidecar, Prometheus.
	hook := &webhook{}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)

	dir := t.TempDir()
	addrs := testenv.FreeAddrs(t, 3)
	amAddr, exporterAddr, promAddr := addrs[0], addrs[1], addrs[2]
	amConfig := writeFile(t, dir, "alertmanager.yml", testAlertmanagerConfig(t, hookSrv.URL))
	am := testenv.Start(t, "alertmanager", alertmanagerBin, nil,
		"--config.file="+amConfig, "--storage.path="+filepath.Join(dir, "am-data"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=debug")

	dsn := fmt.Sprintf("postgresql+psycopg2://postgres@127.0.0.1:5432/%s?sslmode=disable", dbName)
	novaDSN := loadNovaFixture(t, dir, d)
	exporter := testenv.Start(t, "exporter", exporterBin, []string{"IRONIC_EXPORTER_DB_DSN=" + dsn, "IRONIC_EXPORTER_NOVA_DSN=" + novaDSN},
		"--web.listen-address="+exporterAddr, "--refresh.min-interval=0s",
		"--ironic.heartbeat-timeout="+heartbeatTimeout.String(), "--nova.refresh-interval=1s")

	rules, downAnnotations := testRules(t, "IronicConductorDown", downFor)
	rulesPath := writeFile(t, dir, "rules.yml", rules)
	promConfig := writeFile(t, dir, "prometheus.yml", []byte(fmt.Sprintf(`
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs: [{targets: [%q]}]
scrape_configs:
  - job_name: %s
    static_configs: [{targets: [%q]}]
`, rulesPath, amAddr, job, exporterAddr)))
	prometheus := testenv.Start(t, "prometheus", prometheusBin, nil,
		"--config.file="+promConfig, "--storage.tsdb.path="+filepath.Join(dir, "prom-data"),
		"--web.listen-address="+promAddr, "--log.level=debug")
	p := prom{base: "http://" + promAddr}
	procs := []*testenv.Process{am, exporter, prometheus}

	waitFor(t, "Alertmanager ready", 20*time.Second, func() (bool, string) { return httpOK("http://" + amAddr + "/-/ready") }, procs...)
	waitFor(t, "exporter ready", 20*time.Second, func() (bool, string) { return httpOK("http://" + exporterAddr + "/readyz") }, procs...)
	waitFor(t, "Prometheus ready", 20*time.Second, func() (bool, string) { return httpOK(p.base + "/-/ready") }, procs...)
	t.Logf("processes ready after %v", time.Since(started).Round(time.Millisecond))

	// Prometheus scrapes the sidecar, which reads the database.
	waitFor(t, "the sidecar scraped with ironic_up 1", 20*time.Second, func() (bool, string) {
		r, err := p.query(fmt.Sprintf(`ironic_up{job=%q} == 1 and on (instance) up == 1`, job))
		if err != nil {
			return false, err.Error()
		}
		return !r.empty(), "no sample yet"
	}, procs...)
	t.Logf("sidecar scraped after %v", time.Since(started).Round(time.Millisecond))

	// Every rule evaluated, healthy; IronicConductorDown inactive.
	waitFor(t, "every rule evaluated and healthy", 20*time.Second, func() (bool, string) {
		rs, err := p.rules()
		if err != nil {
			return false, err.Error()
		}
		if len(rs) == 0 {
			return false, "no rules loaded"
		}
		var bad []string
		for _, r := range rs {
			if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() || r.LastEvaluation.Year() < 2000 {
				bad = append(bad, fmt.Sprintf("%s: health %q, lastError %q", r.Name, r.Health, r.LastError))
			}
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	}, procs...)
	rs, _ := p.rules()
	for _, r := range rs {
		if r.Name == "IronicConductorDown" && (r.State != "inactive" || len(r.Alerts) > 0) {
			t.Fatalf("IronicConductorDown is %s before any conductor died: %+v", r.State, r.Alerts)
		}
	}
	t.Logf("%d rules healthy after %v", len(rs), time.Since(started).Round(time.Millisecond))

	// c2 stops heartbeating: after heartbeat_timeout it is dead; the alert
	// goes pending, then firing after its `for`.
	hb.stop(hostC2)
	died := time.Now()
	downAlert := func(state string) func() (bool, string) {
		return func() (bool, string) {
			as, err := p.alerts()
			if err != nil {
				return false, err.Error()
			}
			seen := []string{}
			for _, a := range as {
				if a.Labels["alertname"] == "IronicConductorDown" && a.Labels["hostname"] == hostC2 {
					if a.State == state {
						return true, ""
					}
					seen = append(seen, a.State)
				}
			}
			return false, fmt.Sprintf("IronicConductorDown for %s: %v", hostC2, seen)
		}
	}
	pending := waitFor(t, "IronicConductorDown pending", 30*time.Second, downAlert("pending"), procs...)
	firing := waitFor(t, "IronicConductorDown firing", 30*time.Second, downAlert("firing"), procs...)
	t.Logf("IronicConductorDown pending %v after the last heartbeat, firing %v later", pending.Round(time.Millisecond), firing.Round(time.Millisecond))

	// Alertmanager routes it (severity critical) to the critical receiver.
	var got webhookMessage
	waitFor(t, "the webhook notification", 30*time.Second, func() (bool, string) {
		for _, m := range hook.received() {
			for _, a := range m.Alerts {
				if a.Labels["alertname"] == "IronicConductorDown" && a.Labels["hostname"] == hostC2 && a.Status == "firing" {
					got = m
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d messages, none about %s", len(hook.received()), hostC2)
	}, procs...)
	t.Logf("webhook notified %v after the last heartbeat", time.Since(died).Round(time.Millisecond))
	if got.path != "/critical" || got.Receiver != "ironic-critical" || got.Version != "4" {
		t.Errorf("notification at %s for receiver %q (version %q), want /critical, ironic-critical, 4", got.path, got.Receiver, got.Version)
	}
	for _, a := range got.Alerts {
		if a.Labels["alertname"] != "IronicConductorDown" {
			continue
		}
		want := map[string]string{
			// no instance: the alert aggregates the exporter replicas away
			"alertname": "IronicConductorDown", "severity": "critical", "job": job,
			"hostname": hostC2, "state": "dead",
		}
		if fmt.Sprint(a.Labels) != fmt.Sprint(want) {
			t.Errorf("alert labels %v, want %v", a.Labels, want)
		}
		if a.Annotations["summary"] != downAnnotations["summary"] || a.Annotations["runbook_url"] != downAnnotations["runbook_url"] {
			t.Errorf("annotations %v, want summary and runbook_url of the rules file %v", a.Annotations, downAnnotations)
		}
		if d := a.Annotations["description"]; !strings.Contains(d, "Conductor "+hostC2+` (conductor group "")`) ||
			strings.Contains(d, "{{") || strings.Contains(d, "<no value>") {
			t.Errorf("description not rendered for %s: %q", hostC2, d)
		}
		if !strings.HasSuffix(a.Annotations["runbook_url"], "/docs/runbook.md#ironicconductordown") {
			t.Errorf("runbook_url %q", a.Annotations["runbook_url"])
		}
	}

	// The example's inhibitions, in the real Alertmanager.
	checkInhibitions(t, "http://"+amAddr, procs)

	// Every dashboard query returns data, now that every state exists
	// (including a dead conductor and remapped nodes).
	waitFor(t, "the ring churn of c2's death scraped", 20*time.Second, func() (bool, string) {
		r, err := p.query(`ironic_node_conductor_changes_total > 0`)
		if err != nil {
			return false, err.Error()
		}
		return !r.empty(), "no churn yet"
	}, procs...)
	waitFor(t, "the Nova side scraped", 20*time.Second, func() (bool, string) {
		r, err := p.query(`ironic_exporter_nova_cell_up{cell="cell1"} == 1 and on (instance) ironic_nova_compute_up`)
		if err != nil {
			return false, err.Error()
		}
		return !r.empty(), "no Nova cell read yet"
	}, procs...)
	if n := checkDashboards(t, p, dashboardsDir); n == 0 {
		t.Logf("no Grafana dashboard JSON under %s: no dashboard query checked", dashboardsDir)
	} else {
		t.Logf("%d dashboard queries checked", n)
	}
	t.Logf("end to end in %v", time.Since(started).Round(time.Millisecond))
}

// checkInhibitions posts alerts to Alertmanager's API and reads back which
// are suppressed: exporter trouble inhibits the conductor alerts of the same
// exporter only; a critical alert inhibits the warning of the same
// conductor.
func checkInhibitions(t *testing.T, base string, procs []*testenv.Process) {
	t.Helper()
	type alert struct {
		Labels map[string]string `json:"labels"`
	}
	l := func(kv ...string) alert {
		m := map[string]string{"job": job}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return alert{m}
	}
	post := []alert{
		l("alertname", "IronicExporterDatabaseUnreachable", "severity", "critical", "instance", "inhibit-a:10067"),
		l("alertname", "IronicConductorDown", "severity", "critical", "instance", "inhibit-a:10067", "hostname", "x1"),
		l("alertname", "IronicNodesWithoutConductor", "severity", "warning", "instance", "inhibit-a:10067", "conductor_group", "g", "driver", "ipmi"),
		l("alertname", "IronicConductorDown", "severity", "critical", "instance", "inhibit-b:10067", "hostname", "x2"),
		l("alertname", "IronicConductorHeartbeatStale", "severity", "warning", "instance", "inhibit-b:10067", "hostname", "x2"),
		l("alertname", "IronicConductorHeartbeatStale", "severity", "warning", "instance", "inhibit-b:10067", "hostname", "x3"),
	}
	want := map[string]string{ // instance/hostname/alertname -> state
		"inhibit-a:10067//IronicExporterDatabaseUnreachable": "active",
		"inhibit-a:10067/x1/IronicConductorDown":             "suppressed",
		"inhibit-a:10067//IronicNodesWithoutConductor":       "suppressed",
		"inhibit-b:10067/x2/IronicConductorDown":             "active",
		"inhibit-b:10067/x2/IronicConductorHeartbeatStale":   "suppressed",
		"inhibit-b:10067/x3/IronicConductorHeartbeatStale":   "active",
	}
	b, _ := json.Marshal(post)
	resp, err := client.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "Alertmanager's inhibitions", 15*time.Second, func() (bool, string) {
		var got []struct {
			Labels map[string]string `json:"labels"`
			Status struct {
				State       string   `json:"state"`
				InhibitedBy []string `json:"inhibitedBy"`
			} `json:"status"`
		}
		if err := getJSON(t.Context(), base+"/api/v2/alerts", &got); err != nil {
			return false, err.Error()
		}
		states := map[string]string{}
		for _, a := range got {
			k := a.Labels["instance"] + "/" + a.Labels["hostname"] + "/" + a.Labels["alertname"]
			if _, ok := want[k]; ok {
				states[k] = a.Status.State
			}
		}
		return fmt.Sprint(states) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", states, want)
	}, procs...)
}
