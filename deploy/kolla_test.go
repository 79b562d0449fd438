package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/mixin"
)

// TestKollaPrometheus runs a real Prometheus (Debian's prometheus) on the
// configuration Kolla-Ansible builds from deploy/kolla/config, and from
// Kayobe's deploy/kolla/kayobe/kolla/config, as placed in
// /etc/kolla/config: deploy/kolla/test/render.py reproduces the role's
// "*.rules" find, its prometheus.yml.j2 rule_files and the prometheus.yml.d
// merge, with real Jinja2 (python3-jinja2). Prometheus must load every rule
// of the mixin and scrape the job from a real exporter on a real PostgreSQL
// database with Ironic's schema.
func TestKollaPrometheus(t *testing.T) {
	testenv.Need(t, testenv.Prometheus, testenv.PostgreSQL, testenv.IronicPython, testenv.Jinja2)
	py, err := testenv.Python()
	if err != nil {
		t.Fatal(err)
	}
	prometheusBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found in PATH: install Debian's prometheus package (make provision does)")
	}
	rendered, err := mixin.Render(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rendered.Alerts.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	slices.Sort(alerts)

	db, err := testenv.NewIronicDB("ice_kolla")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Drop)
	addrs := testenv.FreeAddrs(t, 4)
	exporterAddr := addrs[0]
	_, port, _ := strings.Cut(exporterAddr, ":")
	dsn := fmt.Sprintf("postgresql+psycopg2://postgres@127.0.0.1:5432/%s?sslmode=disable", db.Name)
	exporter := testenv.Start(t, "exporter", exporterBinary(t), []string{"IRONIC_EXPORTER_DB_DSN=" + dsn},
		"--web.listen-address="+exporterAddr)

	for i, layout := range []struct{ name, dir, flag string }{
		{"kolla-ansible", filepath.Join(root, "deploy", "kolla", "config"), ""},
		{"kayobe", filepath.Join(root, "deploy", "kolla", "kayobe", "kolla", "config"), "--kayobe"},
		{"kayobe-merge_yaml", filepath.Join(root, "deploy", "kolla", "kayobe", "kolla", "config"), "--kayobe-merge"},
	} {
		t.Run(layout.name, func(t *testing.T) {
			promAddr := addrs[1+i]
			out := filepath.Join(t.TempDir(), "prometheus-server")
			args := []string{filepath.Join(root, "deploy", "kolla", "test", "render.py")}
			if layout.flag != "" {
				args = append(args, layout.flag)
			}
			args = append(args, layout.dir, out, port)
			cmd := exec.Command(py, args...)
			cmd.Env = append(os.Environ(), "PROMETHEUS_ADDRESS="+promAddr)
			found, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("render.py: %v\n%s", err, found)
			}
			if got := strings.TrimSpace(string(found)); got != "ironic-conductor-exporter.rules" {
				t.Fatalf("Kolla's *.rules find picked %q", got)
			}
			loaded := runKollaPrometheus(t, prometheusBin, out, promAddr, port, alerts, rendered.Config.JobName, exporter)
			t.Logf("%s: %d rules loaded, job %s up", layout.name, loaded, rendered.Config.JobName)
		})
	}
}

func getJSON(u string, v any) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, strconv.Itoa(resp.StatusCode))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// runKollaPrometheus runs Prometheus on out/prometheus.yml and waits until
// every alert of the mixin is loaded and the exporter's job is up; it
// returns the number of rules loaded.
func runKollaPrometheus(t *testing.T, prometheusBin, out, promAddr, port string, alerts []string, jobName string, exporter *testenv.Process) int {
	t.Helper()
	prom := testenv.Start(t, "prometheus", prometheusBin, nil,
		"--config.file="+filepath.Join(out, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(out, "data"),
		"--web.listen-address="+promAddr)
	base := "http://" + promAddr
	var loaded []string
	var health string
	deadline := time.Now().Add(60 * time.Second)
	for {
		loaded, health = nil, ""
		var rules struct {
			Data struct {
				Groups []struct {
					File  string `json:"file"`
					Rules []struct {
						Name   string `json:"name"`
						Health string `json:"health"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					Labels map[string]string `json:"labels"`
					Health string            `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if getJSON(base+"/api/v1/rules", &rules) == nil && getJSON(base+"/api/v1/targets", &targets) == nil {
			for _, g := range rules.Data.Groups {
				for _, r := range g.Rules {
					if r.Health != "err" {
						loaded = append(loaded, r.Name)
					}
				}
			}
			slices.Sort(loaded)
			for _, tg := range targets.Data.ActiveTargets {
				if tg.Labels["job"] == jobName && tg.Labels["instance"] == "127.0.0.1:"+port {
					health = tg.Health
				}
			}
		}
		if slices.Equal(loaded, alerts) && health == "up" {
			break
		}
		select {
		case <-prom.Done():
			t.Fatalf("prometheus exited: %v\n%s", prom.Err(), prom.Tail(20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: rules loaded %v (want %v), target %s:%s health %q\n%s\n%s",
				loaded, alerts, jobName, port, health, prom.Tail(20), exporter.Tail(10))
		}
		time.Sleep(500 * time.Millisecond)
	}
	return len(loaded)
}

// TestKollaAnsible builds Prometheus' configuration with the installers' own
// code instead of render.py: deploy/kolla/test/render.yml runs kolla-ansible's
// tasks of roles/prometheus/tasks/config.yml with its merge_yaml plugin,
// address filters, prometheus.yml.j2, group_vars and role defaults, through
// Debian's ansible-playbook; render-kayobe.yml first includes Kayobe's own
// roles/kolla-openstack/tasks/config.yml (kolla_custom_config_info's rules,
// Kayobe's templating, copy and merge_yaml) on deploy/kolla/kayobe as
// docs/operators.md places it, the dashboards' copy rule included. Then
// Prometheus must load every rule and scrape the job, as in
// TestKollaPrometheus. ICE_KOLLA_ANSIBLE and ICE_KAYOBE name the two trees
// (kolla-ansible 1a681814, kayobe 720683bc were used); they are not in this
// repository, so the test is skipped without them.
func TestKollaAnsible(t *testing.T) {
	ka := os.Getenv("ICE_KOLLA_ANSIBLE")
	if ka == "" {
		t.Skip("ICE_KOLLA_ANSIBLE unset: no kolla-ansible tree")
	}
	testenv.Need(t, testenv.Prometheus, testenv.PostgreSQL, testenv.IronicPython)
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatal("ansible-playbook not found: apt-get install ansible-core")
	}
	prometheusBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found in PATH")
	}
	rendered, err := mixin.Render(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rendered.Alerts.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	slices.Sort(alerts)
	db, err := testenv.NewIronicDB("ice_kolla_ansible")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Drop)
	addrs := testenv.FreeAddrs(t, 5)
	_, port, _ := strings.Cut(addrs[0], ":")
	dsn := fmt.Sprintf("postgresql+psycopg2://postgres@127.0.0.1:5432/%s?sslmode=disable", db.Name)
	exporter := testenv.Start(t, "exporter", exporterBinary(t), []string{"IRONIC_EXPORTER_DB_DSN=" + dsn},
		"--web.listen-address="+addrs[0])
	test := filepath.Join(root, "deploy", "kolla", "test")

	// run runs a playbook with the plugins of the given trees.
	run := func(t *testing.T, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(playbook, args...)
		cmd.Env = append(os.Environ(), append([]string{"PBR_VERSION=0.0.0", "ANSIBLE_NOCOLOR=1",
			"ANSIBLE_LOCAL_TEMP=" + t.TempDir(), "ANSIBLE_HOME=" + t.TempDir()}, env...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	// kolla renders custom (an /etc/kolla/config) as kolla-ansible does.
	kolla := func(t *testing.T, custom string) string {
		t.Helper()
		dir := t.TempDir()
		out := filepath.Join(dir, "prometheus-server")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		inv := filepath.Join(dir, "inventory.yml")
		// One host in the groups the snippet and prometheus.yml.j2 use; its
		// api_interface the loopback, whose address Ansible's own facts give.
		if err := os.WriteFile(inv, []byte(`all:
  hosts:
    controller-1:
      ansible_connection: local
      ansible_python_interpreter: /usr/bin/python3
  children:
    prometheus: {hosts: {controller-1: {}}}
    prometheus-alertmanager: {hosts: {controller-1: {}}}
    ironic-conductor: {hosts: {controller-1: {}}}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		tmpl, err := os.ReadFile(filepath.Join(ka, "ansible", "roles", "prometheus", "templates", "prometheus.yml.j2"))
		if err != nil {
			t.Fatal(err)
		}
		// Every optional job of prometheus.yml.j2 off but the alertmanager
		// (Kolla copies *.rules only with it), as a globals.yml would say.
		vars := map[string]any{
			"network_interface": "lo", "api_interface": "lo", "enable_prometheus": true,
			"enable_prometheus_alertmanager": true, "prometheus_password": "secret",
			"ironic_conductor_exporter_port": port,
		}
		for _, m := range regexp.MustCompile(`enable_[a-z_]+`).FindAllString(string(tmpl), -1) {
			if _, set := vars[m]; !set && !strings.HasPrefix(m, "enable_tls") {
				vars[m] = false
			}
		}
		vj, err := json.Marshal(vars)
		if err != nil {
			t.Fatal(err)
		}
		run(t, []string{"ANSIBLE_ACTION_PLUGINS=" + filepath.Join(ka, "ansible", "action_plugins"),
			"ANSIBLE_FILTER_PLUGINS=" + filepath.Join(ka, "ansible", "filter_plugins"), "PYTHONPATH=" + ka},
			"-i", inv, filepath.Join(test, "render.yml"), "-e", "kolla_ansible="+ka,
			"-e", "node_custom_config="+custom, "-e", "out_dir="+out, "-e", string(vj))
		// The container sees its rules at /etc/prometheus/; here they are in out.
		p := filepath.Join(out, "prometheus.yml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "/etc/prometheus/", out+"/")), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// kayobe renders Kayobe's configuration paths into an /etc/kolla/config.
	kayobe := func(t *testing.T, extra map[string]any, paths ...string) string {
		t.Helper()
		ky := os.Getenv("ICE_KAYOBE")
		if ky == "" {
			t.Skip("ICE_KAYOBE unset: no Kayobe tree")
		}
		out := t.TempDir()
		vars := map[string]any{
			"kolla_openstack_custom_config_paths_default": []string{filepath.Join(ky, "ansible", "roles", "kolla-openstack", "templates")},
			"kolla_openstack_custom_config_paths_extra":   paths,
			"kolla_enable_prometheus":                     true, "kolla_enable_grafana": true,
		}
		for k, v := range extra {
			vars[k] = v
		}
		vj, err := json.Marshal(vars)
		if err != nil {
			t.Fatal(err)
		}
		run(t, []string{"ANSIBLE_ACTION_PLUGINS=" + filepath.Join(ky, "ansible", "roles", "kolla-openstack", "action_plugins") + ":" + filepath.Join(ky, "ansible", "action_plugins"),
			"ANSIBLE_FILTER_PLUGINS=" + filepath.Join(ky, "ansible", "filter_plugins"),
			"PYTHONPATH=" + filepath.Join(test, "compat") + ":" + ky},
			"-i", "localhost,", "-c", "local", filepath.Join(test, "render-kayobe.yml"), "-e", "kayobe="+ky,
			"-e", "kolla_node_custom_config_path="+out, "-e", string(vj))
		return out
	}
	// kayobeConfig is $KAYOBE_CONFIG_PATH as docs/operators.md fills it.
	kayobeConfig := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		cfg := filepath.Join(dir, "kolla", "config")
		cp := exec.Command("cp", "-r", filepath.Join(root, "deploy", "kolla", "kayobe", "kolla", "config"), filepath.Join(dir, "kolla"))
		if err := os.MkdirAll(filepath.Join(dir, "kolla"), 0o755); err != nil {
			t.Fatal(err)
		}
		if b, err := cp.CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, b)
		}
		if err := os.MkdirAll(filepath.Join(cfg, "grafana", "dashboards"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"ironic-conductor-detail.json", "ironic-conductor-fleet.json"} {
			b, err := os.ReadFile(filepath.Join(root, "deploy", "kolla", "config", "grafana", "dashboards", n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cfg, "grafana", "dashboards", n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// The copy rule docs/operators.md gives for the dashboards.
	copyRule := map[string]any{"kolla_openstack_custom_config_rules_extra": []map[string]any{
		{"glob": "grafana/dashboards/ironic-conductor-*.json", "strategy": "copy", "priority": 1000}}}
	sameDashboards := func(t *testing.T, out string) bool {
		t.Helper()
		for _, n := range []string{"ironic-conductor-detail.json", "ironic-conductor-fleet.json"} {
			want, _ := os.ReadFile(filepath.Join(root, "deploy", "kolla", "config", "grafana", "dashboards", n))
			got, err := os.ReadFile(filepath.Join(out, "grafana", "dashboards", n))
			if err != nil || !bytes.Equal(got, want) {
				return false
			}
		}
		return true
	}

	t.Run("kolla-ansible", func(t *testing.T) {
		n := runKollaPrometheus(t, prometheusBin, kolla(t, filepath.Join(root, "deploy", "kolla", "config")), addrs[1], port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe", func(t *testing.T) {
		custom := kayobe(t, copyRule, kayobeConfig(t))
		if !sameDashboards(t, custom) {
			t.Error("with the copy rule, Kayobe did not copy the dashboards unchanged")
		}
		n := runKollaPrometheus(t, prometheusBin, kolla(t, custom), addrs[2], port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe-environment-merge_yaml", func(t *testing.T) {
		// The same files in a Kayobe environment too: two sources, so
		// Kayobe merges (merge_yaml, its default extend_lists false).
		base, env := kayobeConfig(t), kayobeConfig(t)
		custom := kayobe(t, copyRule, base, env)
		n := runKollaPrometheus(t, prometheusBin, kolla(t, custom), addrs[3], port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe-without-copy-rule", func(t *testing.T) {
		// Without the rule Kayobe templates the dashboards: their {{ }}
		// legends are lost, which is why docs/operators.md asks for it.
		ky := os.Getenv("ICE_KAYOBE")
		if ky == "" {
			t.Skip("ICE_KAYOBE unset")
		}
		out := t.TempDir()
		vj, _ := json.Marshal(map[string]any{
			"kolla_openstack_custom_config_paths_default": []string{filepath.Join(ky, "ansible", "roles", "kolla-openstack", "templates")},
			"kolla_openstack_custom_config_paths_extra":   []string{kayobeConfig(t)},
			"kolla_enable_prometheus":                     true, "kolla_enable_grafana": true,
		})
		c := exec.Command(playbook, "-i", "localhost,", "-c", "local", filepath.Join(test, "render-kayobe.yml"), "-e", "kayobe="+ky,
			"-e", "kolla_node_custom_config_path="+out, "-e", string(vj))
		c.Env = append(os.Environ(), "PBR_VERSION=0.0.0", "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "ANSIBLE_HOME="+t.TempDir(),
			"ANSIBLE_ACTION_PLUGINS="+filepath.Join(ky, "ansible", "roles", "kolla-openstack", "action_plugins")+":"+filepath.Join(ky, "ansible", "action_plugins"),
			"ANSIBLE_FILTER_PLUGINS="+filepath.Join(ky, "ansible", "filter_plugins"), "PYTHONPATH="+filepath.Join(test, "compat")+":"+ky)
		b, err := c.CombinedOutput()
		if err == nil && sameDashboards(t, out) {
			t.Errorf("without the copy rule the dashboards came through unchanged: the rule is needless\n%s", b)
		}
		t.Logf("without the copy rule: playbook error %v, dashboards unchanged %v", err, err == nil && sameDashboards(t, out))
	})
}
