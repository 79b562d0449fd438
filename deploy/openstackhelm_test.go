package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	yamlv2 "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// openstack-helm's own Prometheus (its prometheus chart) does not read
// ServiceMonitors: it discovers Services by annotation and loads the rule
// files of conf.prometheus.rules. Both are done here as that chart does,
// after openstack/openstack-helm at 0ee5adeffcae:
//
//   - prometheus/values.yaml, job kubernetes-service-endpoints: the relabel
//     rules below, applied with Prometheus' own relabel package to the
//     targets endpoints discovery makes of the chart's Service (one per
//     Service port, the pod's address, the Service's labels and
//     annotations as __meta_kubernetes_service_*);
//   - prometheus/templates/configmap-etc.yaml: each key K of
//     conf.prometheus.rules becomes the file K.rules holding `toYaml` of
//     its value, loaded by Prometheus.
const openstackHelmServiceEndpoints = `
- source_labels: [__meta_kubernetes_service_name]
  action: drop
  regex: '(openstack-metrics|prom-metrics|ceph-mgr|node-exporter)'
- source_labels: [__meta_kubernetes_service_annotation_prometheus_io_scrape]
  action: keep
  regex: true
- source_labels: [__meta_kubernetes_service_annotation_prometheus_io_scheme]
  action: replace
  target_label: __scheme__
  regex: (https?)
- source_labels: [__meta_kubernetes_service_annotation_prometheus_io_path]
  action: replace
  target_label: __metrics_path__
  regex: (.+)
- source_labels: [__address__, __meta_kubernetes_service_annotation_prometheus_io_port]
  action: replace
  target_label: __address__
  regex: ([^:]+)(?::\d+)?;(\d+)
  replacement: $1:$2
- action: labelmap
  regex: __meta_kubernetes_service_label_(.+)
- source_labels: [__meta_kubernetes_namespace]
  action: replace
  target_label: kubernetes_namespace
- source_labels: [__meta_kubernetes_service_name]
  action: replace
  target_label: kubernetes_name
- source_labels: [__meta_kubernetes_service_name]
  target_label: job
  replacement: ${1}
`

// TestOpenstackHelmPrometheus: installed as docs/operators.md says
// (release ironic-conductor-exporter, the ironic-etc profile), the chart's
// Service is scraped by openstack-helm's Prometheus on the metrics port
// and path under the job the alert rules select, and the rule file loads
// from conf.prometheus.rules.
func TestOpenstackHelmPrometheus(t *testing.T) {
	var cfgs []*relabel.Config
	// Prometheus' own YAML decoding (its defaults: separator, regex, $1).
	if err := yamlv2.UnmarshalStrict([]byte(openstackHelmServiceEndpoints), &cfgs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if err := c.Validate(model.UTF8Validation); err != nil {
			t.Fatal(err)
		}
	}
	ch := loadChart(t)
	for _, file := range []string{"openstack-helm-ironic-etc-values.yaml", "openstack-helm-values.yaml"} {
		t.Run(file, func(t *testing.T) {
			out, _, err := renderChartAs(ch, profileValues(t, file), "ironic-conductor-exporter")
			if err != nil {
				t.Fatal(err)
			}
			var svc *corev1.Service
			var dep *appsv1.Deployment
			for n, s := range out {
				if !strings.HasSuffix(n, ".yaml") {
					continue // NOTES.txt, _helpers.tpl
				}
				for _, o := range decodeDocs(t, n, []byte(s)) {
					switch o := o.(type) {
					case *corev1.Service:
						svc = o
					case *appsv1.Deployment:
						dep = o
					}
				}
			}
			if svc == nil || dep == nil {
				t.Fatal("no Service or Deployment")
			}
			metricsPort := ""
			byName := map[string]string{}
			for _, p := range container(t, &dep.Spec.Template.Spec, exporterContainer).Ports {
				byName[p.Name] = itoa(p.ContainerPort)
				if p.Name == "metrics" {
					metricsPort = itoa(p.ContainerPort)
				}
			}
			kept := 0
			for _, sp := range svc.Spec.Ports {
				b := labels.NewBuilder(labels.EmptyLabels())
				// Endpoints discovery: the pod's address and the number of
				// the container port the Service port targets.
				target, ok := byName[sp.TargetPort.String()]
				if !ok {
					target = sp.TargetPort.String()
				}
				b.Set("__address__", "10.0.0.5:"+target)
				b.Set("__metrics_path__", "/metrics")
				b.Set("__scheme__", "http")
				b.Set("__meta_kubernetes_namespace", helmNamespace)
				b.Set("__meta_kubernetes_service_name", svc.Name)
				for k, v := range svc.Labels {
					b.Set("__meta_kubernetes_service_label_"+promName(k), v)
				}
				for k, v := range svc.Annotations {
					b.Set("__meta_kubernetes_service_annotation_"+promName(k), v)
				}
				if !relabel.ProcessBuilder(b, cfgs...) {
					continue
				}
				lbls := b.Labels()
				kept++
				if got := lbls.Get("__address__"); got != "10.0.0.5:"+metricsPort {
					t.Errorf("Service port %s: scraped at %s, want the metrics port %s", sp.Name, got, metricsPort)
				}
				if got := lbls.Get("__metrics_path__"); got != "/metrics" {
					t.Errorf("path %s", got)
				}
				if got := lbls.Get("job"); got != alertJob(t) {
					t.Errorf("job %q, the alert rules select %q", got, alertJob(t))
				}
			}
			if kept == 0 {
				t.Error("openstack-helm's Prometheus keeps no target of the Service")
			}
		})
	}

	// conf.prometheus.rules: the value is the rule file's content, written
	// back by toYaml into ironic_conductor_exporter.rules.
	files, err := RuleFiles(filepath.Join(root, AlertsDir))
	if err != nil || len(files) != 1 {
		t.Fatalf("rule files %v: %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var value any
	if err := yaml.Unmarshal(b, &value); err != nil {
		t.Fatal(err)
	}
	values, err := yaml.Marshal(map[string]any{"conf": map[string]any{"prometheus": map[string]any{"rules": map[string]any{"ironic_conductor_exporter": value}}}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Conf struct {
			Prometheus struct {
				Rules map[string]any `json:"rules"`
			} `json:"prometheus"`
		} `json:"conf"`
	}
	if err := yaml.Unmarshal(values, &back); err != nil {
		t.Fatal(err)
	}
	rendered, err := yaml.Marshal(back.Conf.Prometheus.Rules["ironic_conductor_exporter"])
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ironic_conductor_exporter.rules")
	if err := os.WriteFile(out, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	groups, err := LoadRuleGroups([]string{out})
	if err != nil || len(groups) == 0 {
		t.Fatalf("the rules as openstack-helm writes them: %v", err)
	}
	testenv.Need(t, testenv.Promtool)
	if b, err := exec.Command("promtool", "check", "rules", out).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, b)
	}
}

// promName is a Kubernetes label or annotation name as Kubernetes
// discovery writes it into a meta label.
func promName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, s)
}

// The Secrets (and keys) openstack-helm's ironic chart makes with its
// default values, as read at the commits named: our two openstack-helm
// profiles read one of them each. Followed by hand (the chart is not in
// this repository): templates/secret-db.yaml ranges over the oslo_db user
// classes of secrets.oslo_db ("admin" and "ironic" before 11592d607, which
// removed the non-admin ones: "admin" only), each a Secret with
// DB_CONNECTION; templates/configmap-etc.yaml writes the Secret ironic-etc
// with ironic.conf, whose [database]connection it generates from
// endpoints.oslo_db unless conf.ironic.database.connection is null
// (mariadb-operator: the DSN then comes from an ironic.conf.d snippet our
// chart does not mount). TestOpenstackHelmChartSecrets checks this table
// against the chart itself when its trees are given.
var openstackHelmSecrets = map[string][]string{
	// master, openstack/openstack-helm 0ee5adeffcae.
	"0ee5adeffcae": {"ironic-db-admin/DB_CONNECTION", "ironic-etc/ironic.conf"},
	// 50c697fc3cb4, the parent of 11592d607 (2026-07-23).
	"50c697fc3cb4": {"ironic-db-admin/DB_CONNECTION", "ironic-db-user/DB_CONNECTION", "ironic-etc/ironic.conf"},
}

// openstackHelmProfiles: the commits each profile of ci/ works with.
var openstackHelmProfiles = map[string][]string{
	"openstack-helm-ironic-etc-values.yaml": {"0ee5adeffcae", "50c697fc3cb4"},
	"openstack-helm-values.yaml":            {"50c697fc3cb4"},
}

// profileSecret is the Secret and key the chart's Deployment reads its DSN
// (or ironic.conf) from under a profile.
func profileSecret(t *testing.T, file string) string {
	t.Helper()
	out, _, err := renderChartAs(loadChart(t), profileValues(t, file), "ironic-conductor-exporter")
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for n, s := range out {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, o := range decodeDocs(t, n, []byte(s)) {
			d, ok := o.(*appsv1.Deployment)
			if !ok {
				continue
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret == nil {
					continue
				}
				for _, it := range v.Secret.Items {
					refs = append(refs, v.Secret.SecretName+"/"+it.Key)
				}
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						refs = append(refs, e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
					}
				}
			}
		}
	}
	if len(refs) != 1 {
		t.Fatalf("%s: the Deployment reads Secrets %v, want one", file, refs)
	}
	return refs[0]
}

// TestOpenstackHelmProfiles: each openstack-helm profile reads a Secret
// the ironic chart makes at every commit the profile claims, and the
// master profile reads one master still makes.
func TestOpenstackHelmProfiles(t *testing.T) {
	for file, commits := range openstackHelmProfiles {
		ref := profileSecret(t, file)
		for _, c := range commits {
			if !slices.Contains(openstackHelmSecrets[c], ref) {
				t.Errorf("%s reads %s, which openstack-helm's ironic chart does not make at %s", file, ref, c)
			}
		}
		for c, made := range openstackHelmSecrets {
			if !slices.Contains(commits, c) && slices.Contains(made, ref) {
				t.Errorf("%s works at %s too: claim it", file, c)
			}
		}
		b, err := os.ReadFile(filepath.Join(chartDir(), "ci", file))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(commits, "0ee5adeffcae") && !strings.Contains(string(b), "11592d607") {
			t.Errorf("%s does not say that openstack-helm master (since 11592d607) no longer makes %s", file, ref)
		}
	}
}
