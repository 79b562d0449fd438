package deploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	k := newKollaScrape(t, "ice_kolla", 5)
	prometheusBin, rendered, alerts, addrs, port, exporter := k.prometheusBin, k.rendered, k.alerts, k.addrs, k.port, k.exporter

	for i, layout := range []struct{ name, dir, flag, instanceLabel string }{
		{"kolla-ansible", filepath.Join(root, "deploy", "kolla", "config"), "", ""},
		{"kayobe", filepath.Join(root, "deploy", "kolla", "kayobe", "kolla", "config"), "--kayobe", ""},
		{"kayobe-merge_yaml", filepath.Join(root, "deploy", "kolla", "kayobe", "kolla", "config"), "--kayobe-merge", ""},
		// the host's prometheus_instance_label, as Kolla's own jobs honour it
		{"kolla-ansible-instance-label", filepath.Join(root, "deploy", "kolla", "config"), "", "controller-1"},
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
			cmd.Env = append(os.Environ(), "PROMETHEUS_ADDRESS="+promAddr, "PROMETHEUS_INSTANCE_LABEL="+layout.instanceLabel)
			found, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("render.py: %v\n%s", err, found)
			}
			if got := strings.TrimSpace(string(found)); got != "ironic-conductor-exporter.rules" {
				t.Fatalf("Kolla's *.rules find picked %q", got)
			}
			instance := cmp.Or(layout.instanceLabel, "127.0.0.1:"+port)
			loaded := runKollaPrometheus(t, prometheusBin, out, promAddr, port, instance, alerts, rendered.Config.JobName, exporter)
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

// kollaScrape is what the Kolla tests share: Prometheus, the mixin's
// rendering and its alert names, and a real exporter on a fresh Ironic
// database at addrs[0] (the other addresses are for Prometheus servers).
type kollaScrape struct {
	prometheusBin string
	rendered      *mixin.Rendered
	alerts        []string
	addrs         []string
	port          string
	exporter      *testenv.Process
}

func newKollaScrape(t *testing.T, dbName string, nAddrs int) *kollaScrape {
	t.Helper()
	k := &kollaScrape{}
	var err error
	if k.prometheusBin, err = exec.LookPath("prometheus"); err != nil {
		t.Fatal("prometheus not found in PATH: install Debian's prometheus package (make provision does)")
	}
	if k.rendered, err = mixin.Render(root, ""); err != nil {
		t.Fatal(err)
	}
	for _, g := range k.rendered.Alerts.Groups {
		for _, r := range g.Rules {
			k.alerts = append(k.alerts, r.Alert)
		}
	}
	slices.Sort(k.alerts)
	db, err := testenv.NewIronicDB(dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Drop)
	k.addrs = testenv.FreeAddrs(t, nAddrs)
	_, k.port, _ = strings.Cut(k.addrs[0], ":")
	dsn := fmt.Sprintf("postgresql+psycopg2://postgres@127.0.0.1:5432/%s?sslmode=disable", db.Name)
	k.exporter = testenv.Start(t, "exporter", exporterBinary(t), []string{"IRONIC_EXPORTER_DB_DSN=" + dsn},
		"--web.listen-address="+k.addrs[0])
	return k
}

// runKollaPrometheus runs Prometheus on out/prometheus.yml and waits until
// every alert of the mixin is loaded and the exporter's job is up; it
// returns the number of rules loaded.
func runKollaPrometheus(t *testing.T, prometheusBin, out, promAddr, port, instance string, alerts []string, jobName string, exporter *testenv.Process) int {
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
				if tg.Labels["job"] == jobName && tg.Labels["instance"] == instance {
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
