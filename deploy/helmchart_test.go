package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy/helm"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/mixin"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
)

// The Helm chart of deploy/helm is rendered here with Helm's own Go SDK
// (chart loader, chartutil values, engine; lint as `helm lint` runs it) for
// each values profile of its ci/ directory, and every rendered manifest is
// decoded strictly into the Kubernetes and Prometheus Operator types, as the
// kustomize output is in deploy_test.go, then checked for what the exporter
// needs.

const (
	helmRelease   = "ironic"
	helmNamespace = "openstack"
)

func chartDir() string { return filepath.Join(root, helm.ChartDir) }

// helmProfile is one values file of the chart's ci/ and what it must give.
type helmProfile struct {
	file                string // under ci/; "" is values.yaml alone
	dsnSecret, dsnKey   string // the Secret key the DSN comes from; "" with an ironic.conf
	createdDSN          string // the DSN of the Secret the chart creates
	confConfigMap       string // the ironic.conf's ConfigMap or Secret
	confSecret          string
	ironicFlags         []string // the --ironic.* flags, exactly
	replicas            int32
	antiAffinity        string // soft, hard
	pdb                 bool
	job                 string // "" when no ServiceMonitor
	rules, dashboards   bool
	extraArgs           []string
	ruleLabels, smLabel map[string]string
	podMonitor          bool   // a PodMonitor for job
	monitorNamespace    string // the monitors' and rules' namespace; "" the release's
	networkPolicy       bool
	extraEnv            []string // names
	extraObjects        int
	scrapeAnnotations   bool // openstack-helm's Prometheus' discovery
	// nova: the Nova side on, its read-only user's Secret novaSecret, a
	// nova.conf from the Secret novaConf, the computes file's hosts.
	novaSecret, novaConf string
	novaComputes         []string
	// dbInitAdmin: the dbInit Job on, the administrator's connection from
	// this Secret (key DB_CONNECTION).
	dbInitAdmin string
}

var defaultIronicFlags = []string{"--ironic.heartbeat-timeout=60s", "--ironic.hash-partition-exponent=5", "--ironic.hash-ring-algorithm=md5"}

var helmProfiles = []helmProfile{
	{file: "", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags, replicas: 1, antiAffinity: "soft"},
	{file: "existing-secret-values.yaml", dsnSecret: "ironic-ro-db", dsnKey: "connection", replicas: 1, antiAffinity: "soft",
		ironicFlags: []string{"--ironic.heartbeat-timeout=30s", "--ironic.hash-partition-exponent=5", "--ironic.hash-ring-algorithm=sha256"}},
	{file: "created-secret-values.yaml", dsnSecret: helmRelease + "-ironic-conductor-exporter-db", dsnKey: "dsn",
		createdDSN:  "mysql+pymysql://ironic_ro:PASSWORD@mariadb.example/ironic?charset=utf8",
		ironicFlags: defaultIronicFlags, replicas: 1, antiAffinity: "soft"},
	{file: "ironic-conf-configmap-values.yaml", confConfigMap: "ironic-config", replicas: 1, antiAffinity: "soft"},
	// openstack-helm's ironic chart: templates/secret-db.yaml writes the
	// Secret .Values.secrets.oslo_db.ironic (ironic-db-user) with the key
	// DB_CONNECTION; templates/configmap-etc.yaml renders ironic.conf into
	// the Secret ironic-etc, which its conductor mounts.
	{file: "openstack-helm-values.yaml", dsnSecret: "ironic-db-user", dsnKey: "DB_CONNECTION", ironicFlags: defaultIronicFlags, replicas: 1, antiAffinity: "soft",
		scrapeAnnotations: true},
	{file: "openstack-helm-ironic-etc-values.yaml", confSecret: "ironic-etc", replicas: 1, antiAffinity: "soft", scrapeAnnotations: true},
	{file: "extras-values.yaml", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags,
		replicas: 1, antiAffinity: "soft", job: "ironic-conductor-exporter", podMonitor: true, rules: true, monitorNamespace: "monitoring",
		ruleLabels: map[string]string{"release": "prometheus"}, smLabel: map[string]string{"release": "prometheus"},
		networkPolicy: true, extraEnv: []string{"IRONIC_EXPORTER_REFRESH_MIN_INTERVAL"}, extraObjects: 1},
	{file: "monitoring-values.yaml", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags,
		replicas: 2, antiAffinity: "soft", pdb: true, job: "ironic-conductor-exporter", rules: true, dashboards: true,
		ruleLabels: map[string]string{"release": "prometheus"}, smLabel: map[string]string{"release": "prometheus"}},
	{file: "nova-values.yaml", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags, replicas: 1, antiAffinity: "soft",
		novaSecret: "ironic-conductor-exporter-nova", novaConf: "nova-etc", novaComputes: []string{"nova-compute-ironic-0"}},
	// openstack-helm's administrator Secret ironic-db-admin (key
	// DB_CONNECTION, helm-toolkit's job_db_init_mysql reads it the same way).
	{file: "db-init-values.yaml", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags, replicas: 1, antiAffinity: "soft",
		novaSecret: "ironic-conductor-exporter-nova", novaConf: "nova-etc", novaComputes: []string{"nova-compute-ironic-0"},
		networkPolicy: true, dbInitAdmin: "ironic-db-admin"},
	{file: "custom-job-values.yaml", dsnSecret: "ironic-conductor-exporter-db", dsnKey: "dsn", ironicFlags: defaultIronicFlags,
		replicas: 3, antiAffinity: "hard", pdb: true, job: "ironic", rules: true,
		extraArgs: []string{"--no-collector.node-info", "--refresh.min-interval=10s"}},
}

func (p helmProfile) name() string {
	if p.file == "" {
		return "default"
	}
	return strings.TrimSuffix(p.file, "-values.yaml")
}

// rendered is the chart's output for one profile, decoded.
type rendered struct {
	built
	secrets    []*corev1.Secret
	hooks      []*corev1.Secret // Secrets that are Helm hooks (dbInit's)
	jobs       []*batchv1.Job
	configMaps []*corev1.ConfigMap
	netpols    []*networkingv1.NetworkPolicy
	extra      []*corev1.ConfigMap // extraObjects
	values     chartutil.Values    // the coalesced values the templates saw
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

func profileValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir(), "ci", file))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// renderChart renders the chart as `helm install --dry-run` would (install,
// revision 1, default capabilities) with the given user values.
func renderChart(ch *chart.Chart, vals map[string]any) (map[string]string, chartutil.Values, error) {
	return renderChartAs(ch, vals, helmRelease)
}

// renderChartAs renders as renderChart does, for the release named release.
func renderChartAs(ch *chart.Chart, vals map[string]any, release string) (map[string]string, chartutil.Values, error) {
	opts := chartutil.ReleaseOptions{Name: release, Namespace: helmNamespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, nil, err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return nil, nil, err
	}
	coalesced, err := rv.Table("Values")
	return out, coalesced, err
}

func renderProfile(t *testing.T, p helmProfile) *rendered {
	t.Helper()
	out, vals, err := renderChart(loadChart(t), profileValues(t, p.file))
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	r := &rendered{values: vals}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for _, obj := range decodeDocs(t, n, []byte(out[n])) {
			switch o := obj.(type) {
			case *appsv1.Deployment:
				r.deployments = append(r.deployments, o)
			case *corev1.Service:
				r.services = append(r.services, o)
			case *corev1.ServiceAccount:
				r.serviceAccounts = append(r.serviceAccounts, o)
			case *corev1.Secret:
				if o.Annotations["helm.sh/hook"] != "" {
					r.hooks = append(r.hooks, o)
				} else {
					r.secrets = append(r.secrets, o)
				}
			case *batchv1.Job:
				r.jobs = append(r.jobs, o)
			case *corev1.ConfigMap:
				if n == "ironic-conductor-exporter/templates/extra-objects.yaml" {
					r.extra = append(r.extra, o)
				} else {
					r.configMaps = append(r.configMaps, o)
				}
			case *networkingv1.NetworkPolicy:
				r.netpols = append(r.netpols, o)
			case *monitoringv1.PodMonitor:
				r.podMonitors = append(r.podMonitors, o)
			case *policyv1.PodDisruptionBudget:
				r.pdbs = append(r.pdbs, o)
			case *monitoringv1.ServiceMonitor:
				r.serviceMonitors = append(r.serviceMonitors, o)
			case *monitoringv1.PrometheusRule:
				r.rules = append(r.rules, o)
			default:
				t.Errorf("%s: unexpected kind %s", n, obj.GetObjectKind().GroupVersionKind())
			}
		}
	}
	if len(r.deployments) != 1 || len(r.services) != 1 || len(r.serviceAccounts) != 1 {
		t.Fatalf("%d Deployments, %d Services, %d ServiceAccounts: want one of each", len(r.deployments), len(r.services), len(r.serviceAccounts))
	}
	return r
}

// TestHelmProfilesListed: every values file under ci/ is a profile the tests
// check.
func TestHelmProfilesListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir(), "ci", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no profiles in ci/: %v", err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(helmProfiles, func(p helmProfile) bool { return p.file == filepath.Base(f) }) {
			t.Errorf("ci/%s is no profile of helmProfiles", filepath.Base(f))
		}
	}
}

// TestHelmChartCopiesUpToDate: the chart's files/ hold exactly what `go
// generate ./mixin` writes: the rule file of alerts/ byte for byte
// and every dashboard of dashboards/, nothing else.
func TestHelmChartCopiesUpToDate(t *testing.T) {
	files, err := helm.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		have, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Errorf("%v: run go generate ./mixin", err)
			continue
		}
		if string(have) != string(f.Data) {
			t.Errorf("%s is out of date: run go generate ./mixin\n%s", f.Path, cmp.Diff(string(f.Data), string(have)))
		}
	}
	// The source files themselves, as committed.
	for src, cp := range map[string]string{mixin.RulesPath: helm.RulesCopy} {
		a, err1 := os.ReadFile(filepath.Join(root, src))
		b, err2 := os.ReadFile(filepath.Join(root, cp))
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("%s differs from %s: run go generate ./mixin", cp, src)
		}
	}
	dashboards, _ := filepath.Glob(filepath.Join(root, helm.DashboardsDir, "*.json"))
	for _, d := range dashboards {
		a, _ := os.ReadFile(d)
		b, err := os.ReadFile(filepath.Join(root, helm.DashboardsCopyDir, filepath.Base(d)))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s has no up-to-date copy in %s", rel(d), helm.DashboardsCopyDir)
		}
	}
	err = filepath.WalkDir(filepath.Join(chartDir(), "files"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !want[rel(p)] {
			t.Errorf("%s is not generated: remove it or run go generate ./mixin", rel(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHelmChartLint runs Helm's linter (what `helm lint` and action.Lint
// run) with each profile: no warning, no error.
func TestHelmChartLint(t *testing.T) {
	for _, p := range helmProfiles {
		t.Run(p.name(), func(t *testing.T) {
			l := lint.AllWithKubeVersionAndSchemaValidation(chartDir(), profileValues(t, p.file), helmNamespace, nil, false)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m.Error())
				} else {
					t.Log(m.Error())
				}
			}
		})
	}
}

// TestHelmChartRejects: values the chart cannot honour fail the render with
// a message, instead of a pod that cannot start.
func TestHelmChartRejects(t *testing.T) {
	ch := loadChart(t)
	for name, tc := range map[string]struct {
		values string
		want   string
	}{
		"secret without dsn":      {"database: {source: secret}", "needs database.dsn"},
		"ironicConf without file": {"database: {source: ironicConf}", "needs ironicConf.configMap or ironicConf.secret"},
		"two ironic.conf":         {"ironicConf: {configMap: a, secret: b}", "not both"},
		"unknown source":          {"database: {source: env}", `database.source "env"`},
		"existing without name":   {"database: {existingSecret: {name: ''}}", "needs database.existingSecret.name"},
		"anti-affinity":           {"podAntiAffinity: always", `podAntiAffinity "always"`},
		"dbInit without admin":    {"dbInit: {enabled: true}", "needs dbInit.adminSecret.name"},
		"dbInit with ironic.conf": {"{dbInit: {enabled: true, adminSecret: {name: a}}, database: {source: ironicConf}, ironicConf: {secret: e}}", "dbInit.ironic needs Ironic's DSN in a Secret"},
		"dbInit backend":          {"dbInit: {enabled: true, backend: oracle, adminSecret: {name: a}}", `dbInit.backend "oracle"`},
		"dbInit without users":    {"dbInit: {enabled: true, ironic: false, adminSecret: {name: a}}", "no user to create"},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = renderChart(ch, v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestHelmChartProfiles renders every profile and checks its objects.
func TestHelmChartProfiles(t *testing.T) {
	flags := binaryFlags(t)
	for _, p := range helmProfiles {
		t.Run(p.name(), func(t *testing.T) {
			r := renderProfile(t, p)
			checkHelmPod(t, p, r, flags)
			checkHelmSelectors(t, p, r)
			checkHelmMonitoring(t, p, r)
			checkHelmDBInit(t, p, r)
		})
	}
}

func checkHelmPod(t *testing.T, p helmProfile, r *rendered, flags map[string]bool) {
	d := r.deployments[0]
	pod := &d.Spec.Template.Spec
	c := container(t, pod, exporterContainer)
	if p.dsnSecret != "" {
		// The kustomize base's own checks hold as they are.
		t.Run("kustomize-checks", func(t *testing.T) { checkExporterPod(t, pod, flags) })
	}

	// Hardening (also with an ironic.conf, where the kustomize checks above
	// do not apply).
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("no securityContext")
	case !isTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser != 65532:
		t.Error("not running as the non-root UID 65532")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation not false")
	case !isTrue(sc.ReadOnlyRootFilesystem):
		t.Error("readOnlyRootFilesystem not true")
	case isTrue(sc.Privileged):
		t.Error("privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Error("capabilities: want drop [ALL] and nothing added")
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("seccompProfile not RuntimeDefault")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("service account token mounted")
	}
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl[res]; !ok || q.IsZero() {
				t.Errorf("resource %s: missing request or limit", res)
			}
		}
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("volume %s mounted read-write", m.Name)
		}
	}
	if len(c.Command) > 0 {
		t.Errorf("command %q overrides the image's entrypoint", c.Command)
	}

	// Arguments: each a flag of the binary; the port from the one values key.
	port := fmt.Sprint(r.values["port"])
	var ironicFlags, rest []string
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !flags[name] {
			t.Errorf("argument %q is not a flag of the exporter", a)
		}
		switch {
		case name == "db.dsn" || name == "db.dsn-file":
			t.Errorf("%s: the DSN comes from the environment or ironic.conf", a)
		case strings.HasPrefix(name, "ironic.") && name != "ironic.config-file":
			ironicFlags = append(ironicFlags, a)
		default:
			rest = append(rest, a)
		}
	}
	if !slices.Equal(ironicFlags, p.ironicFlags) {
		t.Errorf("Ironic's settings %q, want %q (with an ironic.conf: none, the file's win)", ironicFlags, p.ironicFlags)
	}
	if !slices.Contains(rest, "--web.listen-address=:"+port) {
		t.Errorf("no --web.listen-address=:%s in %q", port, rest)
	}
	for _, a := range p.extraArgs {
		if !slices.Contains(rest, a) {
			t.Errorf("extraArgs %q not passed", a)
		}
	}
	// The API door (--api.listen-address) is the third port.
	if len(c.Ports) != 3 || itoa(c.Ports[0].ContainerPort) != port || c.Ports[0].Name != "metrics" ||
		c.Ports[1].Name != "probes" || !slices.Contains(c.Args, "--web.probe-listen-address=:"+itoa(c.Ports[1].ContainerPort)) ||
		c.Ports[2].Name != "api" || !slices.Contains(c.Args, "--api.listen-address=:"+itoa(c.Ports[2].ContainerPort)) {
		t.Errorf("container ports %v, want metrics on %s, the probe listener's and the API door's", c.Ports, port)
	}
	checkProbe(t, "liveness", c.LivenessProbe, "/healthz", "probes")
	checkProbe(t, "readiness", c.ReadinessProbe, "/readyz", "probes")

	// The DSN.
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "IRONIC_EXPORTER_DB_DSN" {
			env = &c.Env[i]
		}
	}
	confArg := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--ironic.config-file=") })
	if p.dsnSecret != "" {
		switch {
		case env == nil || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil:
			t.Fatal("IRONIC_EXPORTER_DB_DSN not from a Secret")
		case env.ValueFrom.SecretKeyRef.Name != p.dsnSecret || env.ValueFrom.SecretKeyRef.Key != p.dsnKey:
			t.Errorf("DSN from Secret %s key %s, want %s key %s", env.ValueFrom.SecretKeyRef.Name, env.ValueFrom.SecretKeyRef.Key, p.dsnSecret, p.dsnKey)
		}
		if confArg {
			t.Error("--ironic.config-file without an ironic.conf")
		}
	} else if env != nil {
		t.Error("IRONIC_EXPORTER_DB_DSN set: it would override ironic.conf's [database]connection")
	}
	switch {
	case p.createdDSN != "":
		if len(r.secrets) != 1 || r.secrets[0].Name != p.dsnSecret || r.secrets[0].StringData[p.dsnKey] != p.createdDSN {
			t.Errorf("want the chart's Secret %s with key %s = the DSN", p.dsnSecret, p.dsnKey)
		}
		if d.Spec.Template.Annotations["checksum/db"] == "" {
			t.Error("no checksum of the DSN: pods would not restart when it changes")
		}
	case len(r.secrets) > 0:
		t.Errorf("%d Secrets rendered: the profile brings its own", len(r.secrets))
	}
	checkHelmNova(t, p, r, c, pod)
	if p.confConfigMap != "" || p.confSecret != "" {
		path := "/etc/ironic/ironic.conf"
		if !slices.Contains(c.Args, "--ironic.config-file="+path) {
			t.Errorf("no --ironic.config-file=%s", path)
		}
		m, v := mountOf(c, pod, path)
		switch {
		case m == nil || v == nil:
			t.Fatalf("%s is on no volume", path)
		case !m.ReadOnly:
			t.Error("ironic.conf mounted read-write")
		case p.confConfigMap != "" && (v.ConfigMap == nil || v.ConfigMap.Name != p.confConfigMap || len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0].Path != "ironic.conf"):
			t.Errorf("volume %s: want ConfigMap %s with ironic.conf", v.Name, p.confConfigMap)
		case p.confSecret != "" && (v.Secret == nil || v.Secret.SecretName != p.confSecret || len(v.Secret.Items) != 1 || v.Secret.Items[0].Path != "ironic.conf"):
			t.Errorf("volume %s: want Secret %s with ironic.conf", v.Name, p.confSecret)
		}
	}
}

func checkHelmSelectors(t *testing.T, p helmProfile, r *rendered) {
	d, svc := r.deployments[0], r.services[0]
	podLabels := labels.Set(d.Spec.Template.Labels)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != p.replicas {
		t.Errorf("replicas %v, want %d", d.Spec.Replicas, p.replicas)
	}
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(podLabels) || sel.Empty() {
		t.Error("the Deployment's selector does not select its pods")
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Error("the Service does not select the exporter's pods")
	}
	want := []string{fmt.Sprintf("metrics:%v->metrics", r.values["port"]), fmt.Sprintf("api:%v->api", r.values["apiPort"])}
	var got []string
	for _, sp := range svc.Spec.Ports {
		got = append(got, fmt.Sprintf("%s:%d->%s", sp.Name, sp.Port, sp.TargetPort.String()))
	}
	if !slices.Equal(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa == "" || r.serviceAccounts[0].Name != sa ||
		r.serviceAccounts[0].AutomountServiceAccountToken == nil || *r.serviceAccounts[0].AutomountServiceAccountToken {
		t.Error("the pods do not run as the chart's ServiceAccount, or it mounts a token")
	}

	aff := d.Spec.Template.Spec.Affinity
	var term *corev1.PodAffinityTerm
	switch {
	case aff == nil || aff.PodAntiAffinity == nil:
	case p.antiAffinity == "soft" && len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1:
		term = &aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	case p.antiAffinity == "hard" && len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 1:
		term = &aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	}
	if term == nil {
		t.Fatalf("no %s pod anti-affinity", p.antiAffinity)
	}
	if s, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil || !s.Matches(podLabels) || term.TopologyKey != "kubernetes.io/hostname" {
		t.Error("anti-affinity does not spread the exporter's pods over hosts")
	}

	if !p.pdb {
		if len(r.pdbs) != 0 {
			t.Error("PodDisruptionBudget rendered")
		}
		return
	}
	if len(r.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets", len(r.pdbs))
	}
	pdb := r.pdbs[0]
	if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !s.Matches(podLabels) {
		t.Error("the PodDisruptionBudget does not select the exporter's pods")
	}
	switch {
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable != nil:
		t.Error("both minAvailable and maxUnavailable")
	case pdb.Spec.MinAvailable != nil && (pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(p.replicas)):
		t.Error("PodDisruptionBudget: want 1 <= minAvailable < replicas")
	case pdb.Spec.MaxUnavailable != nil && (pdb.Spec.MaxUnavailable.IntValue() < 1 || pdb.Spec.MaxUnavailable.IntValue() >= int(p.replicas)):
		t.Error("PodDisruptionBudget: want 1 <= maxUnavailable < replicas")
	case pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil:
		t.Error("PodDisruptionBudget allows nothing")
	}
}

func checkHelmMonitoring(t *testing.T, p helmProfile, r *rendered) {
	svc := r.services[0]
	checkHelmExtras(t, p, r)
	// ServiceMonitor.
	if p.job == "" || p.podMonitor {
		if len(r.serviceMonitors) != 0 {
			t.Error("ServiceMonitor rendered while disabled")
		}
	} else if len(r.serviceMonitors) != 1 {
		t.Errorf("%d ServiceMonitors", len(r.serviceMonitors))
	} else {
		sm := r.serviceMonitors[0]
		if s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector); err != nil || s.Empty() || !s.Matches(labels.Set(svc.Labels)) {
			t.Error("the ServiceMonitor does not select the Service")
		}
		if !sm.Spec.NamespaceSelector.Any && !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, helmNamespace) {
			t.Error("the ServiceMonitor does not look in the release's namespace")
		}
		for k, v := range p.smLabel {
			if sm.Labels[k] != v {
				t.Errorf("ServiceMonitor label %s=%q missing", k, v)
			}
		}
		if len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("%d endpoints", len(sm.Spec.Endpoints))
		}
		e := sm.Spec.Endpoints[0]
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == e.Port }) {
			t.Errorf("endpoint port %q is no port of the Service", e.Port)
		}
		checkScrapeTimes(t, string(e.Interval), string(e.ScrapeTimeout))
		// The job Prometheus gives the series: the Service's name, unless
		// jobLabel or a relabeling sets it.
		job := svc.Name
		if sm.Spec.JobLabel != "" {
			job = svc.Labels[sm.Spec.JobLabel]
		}
		for _, rc := range e.RelabelConfigs {
			if rc.TargetLabel == "job" && len(rc.SourceLabels) == 0 && rc.Replacement != nil && (rc.Action == "" || strings.EqualFold(rc.Action, "replace")) {
				job = *rc.Replacement
			}
		}
		if job != p.job {
			t.Errorf("Prometheus job %q, want %q", job, p.job)
		}
		if p.job == "ironic-conductor-exporter" && job != alertJob(t) {
			t.Errorf("Prometheus job %q, the alert rules select %q", job, alertJob(t))
		}
	}

	// PrometheusRule: the mixin's rules, for the job the ServiceMonitor sets.
	if !p.rules {
		if len(r.rules) != 0 {
			t.Error("PrometheusRule rendered while disabled")
		}
	} else if len(r.rules) != 1 {
		t.Errorf("%d PrometheusRules", len(r.rules))
	} else {
		pr := r.rules[0]
		override := ""
		if p.job != "ironic-conductor-exporter" {
			override = fmt.Sprintf("{jobName: %q}", p.job)
		}
		want := mixinRuleGroups(t, override)
		if override == "" {
			// The default: the committed rule file of alerts/ itself.
			files, err := RuleFiles(filepath.Join(root, AlertsDir))
			if err != nil {
				t.Fatal(err)
			}
			fromFile, err := LoadRuleGroups(files)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromFile, pr.Spec.Groups); diff != "" {
				t.Errorf("PrometheusRule groups differ from %s (-alerts +chart):\n%s", AlertsDir, diff)
			}
		}
		if diff := cmp.Diff(want, pr.Spec.Groups); diff != "" {
			t.Errorf("PrometheusRule groups differ from the mixin rendered with _config %s (-mixin +chart):\n%s", override, diff)
		}
		for k, v := range p.ruleLabels {
			if pr.Labels[k] != v {
				t.Errorf("PrometheusRule label %s=%q missing", k, v)
			}
		}
	}

	// Dashboards: one ConfigMap per dashboard, labelled for the sidecar,
	// holding dashboards/*.json as it is.
	if !p.dashboards {
		for _, cm := range r.configMaps {
			if !strings.HasSuffix(cm.Name, "-nova-computes") {
				t.Error("dashboard ConfigMaps rendered while disabled")
			}
		}
		return
	}
	files, err := filepath.Glob(filepath.Join(root, helm.DashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatal("no dashboards")
	}
	if len(r.configMaps) != len(files) {
		t.Errorf("%d dashboard ConfigMaps for %d dashboards", len(r.configMaps), len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(r.configMaps, func(cm *corev1.ConfigMap) bool { _, ok := cm.Data[name]; return ok })
		if i < 0 {
			t.Errorf("no ConfigMap holds %s", name)
			continue
		}
		cm := r.configMaps[i]
		if len(cm.Data) != 1 || cm.Data[name] != strings.TrimSuffix(string(want), "\n") {
			t.Errorf("ConfigMap %s: %s differs from dashboards/%s", cm.Name, name, name)
		}
		if cm.Labels["grafana_dashboard"] != "1" {
			t.Errorf("ConfigMap %s lacks the sidecar's label grafana_dashboard: \"1\"", cm.Name)
		}
		if cm.Annotations["grafana_folder"] != "Ironic" {
			t.Errorf("ConfigMap %s lacks the folder annotation", cm.Name)
		}
	}
}

// checkHelmExtras checks what the chart offers beyond the basics: the
// PodMonitor, the monitors' namespace and labels, the NetworkPolicy,
// extraEnv, extraObjects, and the annotations openstack-helm's Prometheus
// discovers Services by (openstack-helm-infra prometheus/values.yaml, job
// kubernetes-service-endpoints: keep when
// __meta_kubernetes_service_annotation_prometheus_io_scrape is "true", port
// and path from prometheus.io/port and prometheus.io/path).
func checkHelmExtras(t *testing.T, p helmProfile, r *rendered) {
	d, svc := r.deployments[0], r.services[0]
	podLabels := labels.Set(d.Spec.Template.Labels)
	c := container(t, &d.Spec.Template.Spec, exporterContainer)
	if !p.podMonitor {
		if len(r.podMonitors) != 0 {
			t.Error("PodMonitor rendered while disabled")
		}
	} else if len(r.podMonitors) != 1 {
		t.Errorf("%d PodMonitors", len(r.podMonitors))
	} else {
		pm := r.podMonitors[0]
		if s, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector); err != nil || s.Empty() || !s.Matches(podLabels) {
			t.Error("the PodMonitor does not select the pods")
		}
		if !slices.Contains(pm.Spec.NamespaceSelector.MatchNames, helmNamespace) {
			t.Error("the PodMonitor does not look in the release's namespace")
		}
		if pm.Namespace != p.monitorNamespace {
			t.Errorf("PodMonitor namespace %q, want %q", pm.Namespace, p.monitorNamespace)
		}
		for k, v := range p.smLabel {
			if pm.Labels[k] != v {
				t.Errorf("PodMonitor label %s=%q missing", k, v)
			}
		}
		for _, e := range pm.Spec.PodMetricsEndpoints {
			if e.Port == nil || !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == *e.Port }) {
				t.Error("PodMonitor endpoint port is no port of the container")
			}
			checkScrapeTimes(t, string(e.Interval), string(e.ScrapeTimeout))
			job := ""
			for _, rc := range e.RelabelConfigs {
				if rc.TargetLabel == "job" && rc.Replacement != nil {
					job = *rc.Replacement
				}
			}
			if job != p.job {
				t.Errorf("PodMonitor job %q, want %q", job, p.job)
			}
		}
	}
	for _, pr := range r.rules {
		if pr.Namespace != p.monitorNamespace {
			t.Errorf("PrometheusRule namespace %q, want %q", pr.Namespace, p.monitorNamespace)
		}
	}
	if p.networkPolicy != (len(r.netpols) == 1) {
		t.Errorf("%d NetworkPolicies, want %v", len(r.netpols), p.networkPolicy)
	}
	for _, np := range r.netpols {
		if s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || s.Empty() || !s.Matches(podLabels) {
			t.Error("the NetworkPolicy does not select the pods")
		}
		var ports []int
		for _, in := range np.Spec.Ingress {
			for _, pp := range in.Ports {
				ports = append(ports, pp.Port.IntValue())
			}
		}
		for _, cp := range c.Ports {
			if !slices.Contains(ports, int(cp.ContainerPort)) {
				t.Errorf("the NetworkPolicy admits no traffic to port %d (%s)", cp.ContainerPort, cp.Name)
			}
		}
		if eg := np.Spec.Egress; len(eg) > 0 && p.novaSecret != "" &&
			(len(eg[len(eg)-1].Ports) != 1 || eg[len(eg)-1].Ports[0].Port.IntValue() != 3306 || len(eg[len(eg)-1].To) != 0) {
			// the profiles' own rules name their peers; novaEgress's
			// default names none
			t.Error("egress restricted with the Nova side on, but no rule for Nova's databases (networkPolicy.novaEgress)")
		}
	}
	for _, name := range p.extraEnv {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
			t.Errorf("extraEnv %s missing", name)
		}
	}
	if len(r.extra) != p.extraObjects {
		t.Errorf("%d extra objects, want %d", len(r.extra), p.extraObjects)
	}
	for _, o := range r.extra {
		if o.Name != helmRelease+"-extra" {
			t.Errorf("extra object %q: not templated", o.Name)
		}
	}
	a := svc.Annotations
	if got := a["prometheus.io/scrape"] == "true"; got != p.scrapeAnnotations {
		t.Errorf("prometheus.io/scrape annotation %v, want %v", got, p.scrapeAnnotations)
	} else if got && (a["prometheus.io/port"] != fmt.Sprint(c.Ports[0].ContainerPort) || a["prometheus.io/path"] != "/metrics") {
		t.Errorf("prometheus.io/port %q, path %q: not the metrics port and path", a["prometheus.io/port"], a["prometheus.io/path"])
	}
}

// mixinRuleGroups renders the mixin with a _config override and decodes its
// rule groups as a PrometheusRule carries them.
func mixinRuleGroups(t *testing.T, override string) []monitoringv1.RuleGroup {
	t.Helper()
	m, err := mixin.Render(root, override)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.RulesYAML()
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatal(err)
	}
	return rf.Groups
}

// TestHelmChartCommunityValues renders testdata/helm/prometheus-community-values.yaml:
// the values of prometheus-community's exporter charts, under their names,
// each reaching the object it names.
func TestHelmChartCommunityValues(t *testing.T) {
	vals, err := chartutil.ReadValuesFile(filepath.Join(root, "deploy", "testdata", "helm", "prometheus-community-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := renderChart(loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "ironic-monitoring"
	var d *appsv1.Deployment
	var sm *monitoringv1.ServiceMonitor
	var pr *monitoringv1.PrometheusRule
	extra := 0
	for n, s := range out {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, obj := range decodeDocs(t, n, []byte(s)) {
			// extraManifests are the user's, as written.
			if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != ns && n != "ironic-conductor-exporter/templates/extra-objects.yaml" {
				t.Errorf("%s %s in namespace %q, namespaceOverride %q", obj.GetObjectKind().GroupVersionKind().Kind, m.GetName(), m.GetNamespace(), ns)
			}
			switch o := obj.(type) {
			case *appsv1.Deployment:
				d = o
			case *monitoringv1.ServiceMonitor:
				sm = o
			case *monitoringv1.PrometheusRule:
				pr = o
			case *corev1.ConfigMap:
				if o.Name == helmRelease+"-extra" {
					extra++
				}
			}
		}
	}
	if d == nil || sm == nil || pr == nil {
		t.Fatal("no Deployment, ServiceMonitor or PrometheusRule")
	}
	pod := &d.Spec.Template.Spec
	c := container(t, pod, exporterContainer)
	if want := "ghcr.io/ironic-conductor-exporter/ironic-conductor-exporter@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; c.Image != want {
		t.Errorf("image %s, want %s", c.Image, want)
	}
	side := container(t, pod, "sidecar")
	if !slices.Equal(side.Args, []string{"--release=" + helmRelease}) {
		t.Errorf("extraContainers not templated: %v", side.Args)
	}
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "init" {
		t.Error("initContainers not rendered")
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "IRONIC_EXPORTER_REFRESH_MIN_INTERVAL" }) ||
		!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "IRONIC_EXPORTER_DB_DSN" }) {
		t.Error("extraEnvs not beside the DSN")
	}
	if extra != 1 {
		t.Errorf("%d extraManifests objects, want 1", extra)
	}
	if !slices.Equal(sm.Spec.TargetLabels, []string{"app.kubernetes.io/instance"}) {
		t.Errorf("serviceMonitor.targetLabels: %v", sm.Spec.TargetLabels)
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, ns) {
		t.Errorf("the ServiceMonitor looks in %v, the Service is in %s", sm.Spec.NamespaceSelector.MatchNames, ns)
	}
	if pr.Labels["release"] != "prometheus" {
		t.Error("prometheusRule.additionalLabels not on the PrometheusRule")
	}
	rendered, err := mixin.Render(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, g := range rendered.Alerts.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && r.Alert != "IronicExporterAbsent" {
				want = append(want, r.Alert)
			}
		}
	}
	want = append(want, "IronicExporterAbsentLong")
	var got []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				got = append(got, r.Alert)
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("alerts %v, want %v (one disabled, one added)", got, want)
	}
}

// TestHelmChartOldNames: the chart's own value names keep working beside
// prometheus-community's (extraEnv and extraEnvs, extraObjects and
// extraManifests, prometheusRule.labels and additionalLabels), and
// image.repository alone names the image as before.
func TestHelmChartOldNames(t *testing.T) {
	vals := map[string]any{
		"extraEnv":       []any{map[string]any{"name": "A", "value": "1"}},
		"extraEnvs":      []any{map[string]any{"name": "B", "value": "2"}},
		"extraObjects":   []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "one"}}},
		"extraManifests": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "two"}}},
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"a": "1"}, "additionalLabels": map[string]any{"b": "2"}},
	}
	out, _, err := renderChart(loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var env []string
	var image string
	var rl map[string]string
	for n, s := range out {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, obj := range decodeDocs(t, n, []byte(s)) {
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				names[o.Name] = true
			case *appsv1.Deployment:
				c := container(t, &o.Spec.Template.Spec, exporterContainer)
				image = c.Image
				for _, e := range c.Env {
					env = append(env, e.Name)
				}
			case *monitoringv1.PrometheusRule:
				rl = o.Labels
			}
		}
	}
	if !names["one"] || !names["two"] {
		t.Errorf("extraObjects and extraManifests: %v", names)
	}
	if !slices.Contains(env, "A") || !slices.Contains(env, "B") {
		t.Errorf("extraEnv and extraEnvs: %v", env)
	}
	if rl["a"] != "1" || rl["b"] != "2" {
		t.Errorf("prometheusRule labels and additionalLabels: %v", rl)
	}
	if want := "ghcr.io/ironic-conductor-exporter/ironic-conductor-exporter:v" + loadChart(t).Metadata.AppVersion; image != want {
		t.Errorf("image %s, want %s", image, want)
	}
}

// checkHelmNova: with the Nova side on, nova_api's DSN and the cells'
// template are files of the read-only user's Secret, never arguments or
// environment; the nova.conf and the computes file are mounted, the
// latter a ConfigMap the exporter's own parser reads.
func checkHelmNova(t *testing.T, p helmProfile, r *rendered, c *corev1.Container, pod *corev1.PodSpec) {
	novaArgs := map[string]string{}
	for _, a := range c.Args {
		if name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "="); strings.HasPrefix(name, "nova.") {
			novaArgs[name] = v
		}
	}
	if p.novaSecret == "" {
		if len(novaArgs) > 0 {
			t.Errorf("Nova flags %v with the Nova side off", novaArgs)
		}
		return
	}
	if novaArgs["nova.dsn"] != "" || novaArgs["nova.cell-dsn-template"] != "" {
		t.Error("a Nova DSN on the command line")
	}
	for flag, key := range map[string]string{"nova.dsn-file": "api-dsn", "nova.cell-dsn-template-file": "cell-dsn-template"} {
		path := novaArgs[flag]
		m, v := mountOf(c, pod, path)
		if path == "" || m == nil || v == nil || v.Secret == nil || v.Secret.SecretName != p.novaSecret ||
			!slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Key == key && strings.HasSuffix(path, "/"+k.Path) }) {
			t.Errorf("--%s=%q is not key %s of the Secret %s", flag, path, key, p.novaSecret)
		}
	}
	if m, v := mountOf(c, pod, novaArgs["nova.config-file"]); m == nil || v == nil || v.Secret == nil || v.Secret.SecretName != p.novaConf {
		t.Errorf("--nova.config-file=%q is not from the Secret %s", novaArgs["nova.config-file"], p.novaConf)
	}
	path := novaArgs["nova.computes-file"]
	m, v := mountOf(c, pod, path)
	if m == nil || v == nil || v.ConfigMap == nil {
		t.Fatalf("--nova.computes-file=%q is on no ConfigMap", path)
	}
	for _, cm := range r.configMaps {
		if cm.Name == v.ConfigMap.Name {
			f, err := nova.ParseComputes(strings.NewReader(cm.Data[filepath.Base(path)]), path)
			if err != nil {
				t.Fatalf("the computes file: %v", err)
			}
			var hosts []string
			for _, fc := range f.Computes {
				hosts = append(hosts, fc.Host)
			}
			if !slices.Equal(hosts, p.novaComputes) {
				t.Errorf("computes %v, want %v", hosts, p.novaComputes)
			}
			return
		}
	}
	t.Errorf("no ConfigMap %s rendered", v.ConfigMap.Name)
}

// TestHelmChartNovaEgress: with egress restricted and the Nova side on, the
// NetworkPolicy admits Nova's databases (networkPolicy.novaEgress) after
// the operator's rules; with the Nova side off, or egress not restricted,
// it adds nothing.
func TestHelmChartNovaEgress(t *testing.T) {
	ch := loadChart(t)
	base := `{networkPolicy: {enabled: true, egress: [{ports: [{port: 53, protocol: UDP}]}]%s}, nova: {enabled: %v}}`
	for _, tc := range []struct {
		name, extra string
		nova        bool
		rules       int
		to          string // the Nova rule's peer, "" any
		port        int
	}{
		{"nova off", "", false, 1, "", 0},
		{"nova on", "", true, 2, "", 3306},
		{"nova on, peers", `, novaEgress: {to: [{ipBlock: {cidr: 10.0.0.0/24}}], ports: [{port: 5432, protocol: TCP}]}`, true, 2, "10.0.0.0/24", 5432},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(fmt.Sprintf(base, tc.extra, tc.nova)))
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := renderChart(ch, v)
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeDocs(t, "networkpolicy.yaml", []byte(out["ironic-conductor-exporter/templates/networkpolicy.yaml"]))
			if len(objs) != 1 {
				t.Fatalf("%d NetworkPolicies", len(objs))
			}
			spec := objs[0].(*networkingv1.NetworkPolicy).Spec
			if !slices.Contains(spec.PolicyTypes, "Egress") || len(spec.Egress) != tc.rules {
				t.Fatalf("policy types %v, %d egress rules, want Egress and %d", spec.PolicyTypes, len(spec.Egress), tc.rules)
			}
			if spec.Egress[0].Ports[0].Port.IntValue() != 53 {
				t.Error("the operator's rule is not first")
			}
			if tc.rules == 1 {
				return
			}
			nr := spec.Egress[1]
			if len(nr.Ports) != 1 || nr.Ports[0].Port.IntValue() != tc.port {
				t.Errorf("Nova's rule admits ports %v, want %d", nr.Ports, tc.port)
			}
			switch {
			case tc.to == "" && len(nr.To) != 0:
				t.Errorf("Nova's rule admits only %v", nr.To)
			case tc.to != "" && (len(nr.To) != 1 || nr.To[0].IPBlock == nil || nr.To[0].IPBlock.CIDR != tc.to):
				t.Errorf("Nova's rule admits %v, want %s", nr.To, tc.to)
			}
		})
	}
}
