//go:build upstream

package deploy

// The tests that run an installer's own code from its source tree, which
// neither Debian nor the Go module proxy serves: they need ICE_KOLLA_ANSIBLE,
// ICE_KAYOBE, ICE_OPENSTACK_HELM and ICE_OPERATOR_OUTPUT (deploy/README.md)
// and run with `make test-upstream`, which fails when one is missing.
// `make test` runs the models they check (TestKollaPrometheus,
// TestOpenstackHelmProfiles, TestOperator).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

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
		t.Fatal("ICE_KOLLA_ANSIBLE unset: make test-upstream needs it (deploy/README.md)")
	}
	testenv.Need(t, testenv.Prometheus, testenv.PostgreSQL, testenv.IronicPython)
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatal("ansible-playbook not found: apt-get install ansible-core")
	}
	k := newKollaScrape(t, "ice_kolla_ansible", 5)
	prometheusBin, rendered, alerts, addrs, port, exporter := k.prometheusBin, k.rendered, k.alerts, k.addrs, k.port, k.exporter
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
			t.Fatal("ICE_KAYOBE unset: make test-upstream needs it (deploy/README.md)")
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
		n := runKollaPrometheus(t, prometheusBin, kolla(t, filepath.Join(root, "deploy", "kolla", "config")), addrs[1], port, "127.0.0.1:"+port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe", func(t *testing.T) {
		custom := kayobe(t, copyRule, kayobeConfig(t))
		if !sameDashboards(t, custom) {
			t.Error("with the copy rule, Kayobe did not copy the dashboards unchanged")
		}
		n := runKollaPrometheus(t, prometheusBin, kolla(t, custom), addrs[2], port, "127.0.0.1:"+port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe-environment-merge_yaml", func(t *testing.T) {
		// The same files in a Kayobe environment too: two sources, so
		// Kayobe merges (merge_yaml, its default extend_lists false).
		base, env := kayobeConfig(t), kayobeConfig(t)
		custom := kayobe(t, copyRule, base, env)
		n := runKollaPrometheus(t, prometheusBin, kolla(t, custom), addrs[3], port, "127.0.0.1:"+port, alerts, rendered.Config.JobName, exporter)
		t.Logf("%d rules loaded, job up", n)
	})
	t.Run("kayobe-without-copy-rule", func(t *testing.T) {
		// Without the rule Kayobe templates the dashboards: their {{ }}
		// legends are lost, which is why docs/operators.md asks for it.
		ky := os.Getenv("ICE_KAYOBE")
		if ky == "" {
			t.Fatal("ICE_KAYOBE unset: make test-upstream needs it (deploy/README.md)")
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

// TestOpenstackHelmChartSecrets renders openstack-helm's ironic chart (with
// its helm-toolkit) as helm would, with its default values, and compares
// the Secrets it makes with openstackHelmSecrets; with
// conf.ironic.database.connection null, ironic.conf must have no
// connection (what docs/operators.md says of mariadb-operator).
// ICE_OPENSTACK_HELM names, per commit, a directory holding that commit's
// ironic/ and helm-toolkit/ ("0ee5adeffcae=/path,50c697fc3cb4=/path"); the
// chart is not in this repository, so it is skipped without.
func TestOpenstackHelmChartSecrets(t *testing.T) {
	env := os.Getenv("ICE_OPENSTACK_HELM")
	if env == "" {
		t.Fatal("ICE_OPENSTACK_HELM unset: make test-upstream needs it (deploy/README.md)")
	}
	for _, kv := range strings.Split(env, ",") {
		commit, dir, _ := strings.Cut(kv, "=")
		want, ok := openstackHelmSecrets[commit]
		if !ok {
			t.Fatalf("ICE_OPENSTACK_HELM: no recorded Secrets for %q", commit)
		}
		t.Run(commit, func(t *testing.T) {
			secrets := renderOpenstackHelmIronic(t, dir, nil)
			var got []string
			for name, keys := range secrets {
				for k := range keys {
					got = append(got, name+"/"+k)
				}
			}
			slices.Sort(got)
			var gotDSN []string
			for _, g := range got {
				if strings.HasSuffix(g, "/DB_CONNECTION") || g == "ironic-etc/ironic.conf" {
					gotDSN = append(gotDSN, g)
				}
			}
			if !slices.Equal(gotDSN, want) {
				t.Errorf("the chart makes %v, recorded %v", gotDSN, want)
			}
			if !strings.Contains(secrets["ironic-etc"]["ironic.conf"], "connection = mysql+pymysql://") {
				t.Error("ironic-etc's ironic.conf has no MySQL [database]connection")
			}
			null := renderOpenstackHelmIronic(t, dir, map[string]any{"conf": map[string]any{"ironic": map[string]any{"database": map[string]any{"connection": nil}}}})
			if strings.Contains(null["ironic-etc"]["ironic.conf"], "connection = mysql") {
				t.Error("with conf.ironic.database.connection null, ironic.conf still has the connection")
			}
		})
	}
}

// TestOperatorModel compares the model with what the operator's own
// pkg/ironic made: ICE_OPERATOR_OUTPUT names a directory holding, for each
// resource of operatorResources, a file of the same base name with the
// YAML documents EnsureIronic left in controller-runtime's fake client
// (its Deployment and Jobs). The operator's module is not served by the Go
// module proxy, so that output cannot be made here by default.
func TestOperatorModel(t *testing.T) {
	dir := os.Getenv("ICE_OPERATOR_OUTPUT")
	if dir == "" {
		t.Fatal("ICE_OPERATOR_OUTPUT unset: make test-upstream needs it (deploy/README.md)")
	}
	for _, r := range operatorResources {
		t.Run(filepath.Base(r.file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.Base(r.file)))
			if err != nil {
				t.Fatal(err)
			}
			model := operatorModel(t, readOperatorCR(t, filepath.Join(root, "deploy", r.file)))
			compareOperatorOutput(t, b, model)
		})
	}
}

// renderOpenstackHelmIronic renders dir/ironic with dir/helm-toolkit as its
// dependency and returns its Secrets: name -> key -> decoded value.
func renderOpenstackHelmIronic(t *testing.T, dir string, vals map[string]any) map[string]map[string]string {
	t.Helper()
	ch, err := loader.Load(filepath.Join(dir, "ironic"))
	if err != nil {
		t.Fatal(err)
	}
	ht, err := loader.Load(filepath.Join(dir, "helm-toolkit"))
	if err != nil {
		t.Fatal(err)
	}
	ch.SetDependencies(ht)
	if vals == nil {
		vals = map[string]any{}
	}
	out, _, err := renderChartAs(ch, vals, "ironic")
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string]string{}
	for n, s := range out {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range splitDocs([]byte(s)) {
			var sec corev1.Secret
			if err := yaml.Unmarshal(doc, &sec); err != nil || sec.Kind != "Secret" {
				continue
			}
			m := map[string]string{}
			for k, v := range sec.Data {
				m[k] = string(v)
			}
			for k, v := range sec.StringData {
				m[k] = v
			}
			secrets[sec.Name] = m
		}
	}
	return secrets
}

func compareOperatorOutput(t *testing.T, b []byte, model operatorObjects) {
	t.Helper()
	want := map[string]corev1.PodTemplateSpec{"Deployment/" + model.ironic.Name: model.ironic.Spec.Template}
	for _, j := range model.jobs {
		want["Job/"+j.Name] = j.Spec.Template
	}
	got := map[string]corev1.PodTemplateSpec{}
	for _, doc := range splitDocs(b) {
		var m struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &m); err != nil || m.Kind == "" {
			continue
		}
		switch m.Kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.Unmarshal(doc, &d); err != nil {
				t.Fatal(err)
			}
			if d.Namespace != model.ironic.Namespace || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 ||
				d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType ||
				!equalMaps(d.Spec.Selector.MatchLabels, model.ironic.Spec.Selector.MatchLabels) {
				t.Errorf("Deployment %s: namespace, replicas, strategy or selector differ from the model", d.Name)
			}
			got["Deployment/"+d.Name] = d.Spec.Template
		case "Job":
			var j batchv1.Job
			if err := yaml.Unmarshal(doc, &j); err != nil {
				t.Fatal(err)
			}
			got["Job/"+j.Name] = j.Spec.Template
		default:
			got[m.Kind] = corev1.PodTemplateSpec{}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the operator makes %s, the model does not", k)
		}
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("the model makes %s, the operator does not", k)
			continue
		}
		if a, b := podShape(g), podShape(w); a != b {
			t.Errorf("%s differs:\noperator:\n%s\nmodel:\n%s", k, a, b)
		}
	}
}

// podShape is what the model must get right of a pod: labels, host
// network, DNS and restart policy, the volumes (name and kind), and per
// container (in order) its name, restart policy, user and mounts and, for
// the exporter, all of it.
func podShape(p corev1.PodTemplateSpec) string {
	var b bytes.Buffer
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "label %s=%s\n", k, p.Labels[k])
	}
	fmt.Fprintf(&b, "hostNetwork %v dnsPolicy %q restartPolicy %q automountToken %v\n", p.Spec.HostNetwork, p.Spec.DNSPolicy,
		p.Spec.RestartPolicy, fmt.Sprint(p.Spec.AutomountServiceAccountToken != nil && *p.Spec.AutomountServiceAccountToken))
	for _, v := range p.Spec.Volumes {
		kind := "other"
		switch {
		case v.EmptyDir != nil:
			kind = "emptyDir"
		case v.Name == "ironic-auth" && v.Secret != nil:
			kind = "secret (a generated name)"
		case v.Secret != nil:
			kind = "secret " + v.Secret.SecretName
		}
		fmt.Fprintf(&b, "volume %s %s\n", v.Name, kind)
	}
	for _, cs := range []struct {
		what string
		cs   []corev1.Container
	}{{"init", p.Spec.InitContainers}, {"container", p.Spec.Containers}} {
		for _, c := range cs.cs {
			rp := ""
			if c.RestartPolicy != nil {
				rp = string(*c.RestartPolicy)
			}
			fmt.Fprintf(&b, "%s %s restart %q user %v\n", cs.what, c.Name, rp, c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil)
			for _, m := range c.VolumeMounts {
				fmt.Fprintf(&b, "  mount %s %s ro=%v\n", m.Name, m.MountPath, m.ReadOnly)
			}
			if c.Name == exporterContainer {
				y, _ := yaml.Marshal(c)
				b.Write(y)
			}
		}
	}
	return b.String()
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
