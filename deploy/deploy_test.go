package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// The tests here check the deployment files without a cluster: every
// Kubernetes manifest decodes strictly (unknown or duplicate fields are
// errors) into the typed API objects of k8s.io/api and the Prometheus
// Operator, every overlay builds with kustomize (krusty, in process), and the
// built objects are checked for what the exporter needs: hardening, probes on
// the right endpoints, the DSN from a Secret or a password-less SQLite path,
// flags the binary knows, selectors that select.

const exporterContainer = "ironic-conductor-exporter"

var root = func() string {
	r, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	return r
}()

func kubeDir() string { return filepath.Join(root, "deploy", "kubernetes") }

func TestMain(m *testing.M) {
	code := m.Run()
	runCleanups()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// decoder decodes strictly into the types of every kind the manifests use.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme, networkingv1.AddToScheme,
		batchv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// decodeDocs splits a multi-document YAML stream and decodes each document.
func decodeDocs(t *testing.T, name string, data []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	r := utilyaml.NewYAMLReader(bufioReader(data))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s: document %d: %v", name, i, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func manifestFiles(t *testing.T) (kustomizations, manifests []string) {
	t.Helper()
	err := filepath.WalkDir(kubeDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case d.Name() == "kustomization.yaml" || d.Name() == "kustomization.yml":
			kustomizations = append(kustomizations, p)
		case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"):
			manifests = append(manifests, p)
		default:
			t.Errorf("%s: unexpected file in deploy/kubernetes", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kustomizations) == 0 || len(manifests) == 0 {
		t.Fatal("no manifests found")
	}
	return kustomizations, manifests
}

// TestManifestsDecodeStrictly: every manifest, patches included, is a valid
// object of its kind with no unknown field.
func TestManifestsDecodeStrictly(t *testing.T) {
	_, manifests := manifestFiles(t)
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if objs := decodeDocs(t, rel(p), b); len(objs) == 0 {
			t.Errorf("%s: no object", rel(p))
		}
	}
}

// TestKustomizationsStrictAndComplete: every kustomization.yaml decodes into
// kustomize's own type without unknown fields, every file it names exists,
// and every manifest is referenced by some kustomization.
func TestKustomizationsStrictAndComplete(t *testing.T) {
	kustomizations, manifests := manifestFiles(t)
	referenced := map[string]bool{}
	for _, p := range kustomizations {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var k types.Kustomization
		if err := yaml.UnmarshalStrict(b, &k); err != nil {
			t.Errorf("%s: %v", rel(p), err)
			continue
		}
		switch k.Kind {
		case types.KustomizationKind, types.ComponentKind:
		default:
			t.Errorf("%s: kind %q", rel(p), k.Kind)
		}
		if len(k.PatchesStrategicMerge) > 0 || len(k.PatchesJson6902) > 0 { //nolint:staticcheck // checking they are unused
			t.Errorf("%s: use patches:, not the deprecated patchesStrategicMerge/patchesJson6902", rel(p))
		}
		dir := filepath.Dir(p)
		refs := append(slices.Clone(k.Resources), k.Components...)
		for _, patch := range k.Patches {
			if patch.Path != "" {
				refs = append(refs, patch.Path)
			}
		}
		for _, ref := range refs {
			target := filepath.Join(dir, ref)
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: %s: %v", rel(p), ref, err)
			}
			referenced[target] = true
		}
	}
	for _, m := range manifests {
		if !referenced[m] {
			t.Errorf("%s is referenced by no kustomization.yaml", rel(m))
		}
	}
}

// built is the output of kustomize for each overlay, decoded.
type built struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
	podMonitors     []*monitoringv1.PodMonitor
	rules           []*monitoringv1.PrometheusRule
	serviceAccounts []*corev1.ServiceAccount
}

var (
	buildOnce sync.Once
	builds    map[string]*built
	buildErr  error
)

func overlays(t *testing.T) map[string]*built {
	t.Helper()
	buildOnce.Do(func() {
		builds = map[string]*built{}
		dirs, err := filepath.Glob(filepath.Join(kubeDir(), "overlays", "*"))
		if err != nil || len(dirs) == 0 {
			buildErr = err
			return
		}
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		for _, d := range dirs {
			rm, err := k.Run(filesys.MakeFsOnDisk(), d)
			if err != nil {
				buildErr = err
				return
			}
			var b built
			for _, res := range rm.Resources() {
				y, err := res.AsYAML()
				if err != nil {
					buildErr = err
					return
				}
				obj, _, err := decoder.Decode(y, nil, nil)
				if err != nil {
					buildErr = err
					return
				}
				switch o := obj.(type) {
				case *appsv1.Deployment:
					b.deployments = append(b.deployments, o)
				case *corev1.Service:
					b.services = append(b.services, o)
				case *corev1.ServiceAccount:
					b.serviceAccounts = append(b.serviceAccounts, o)
				case *policyv1.PodDisruptionBudget:
					b.pdbs = append(b.pdbs, o)
				case *monitoringv1.ServiceMonitor:
					b.serviceMonitors = append(b.serviceMonitors, o)
				case *monitoringv1.PodMonitor:
					b.podMonitors = append(b.podMonitors, o)
				case *monitoringv1.PrometheusRule:
					b.rules = append(b.rules, o)
				default:
					buildErr = &unexpectedKind{d, obj}
					return
				}
			}
			builds[filepath.Base(d)] = &b
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if len(builds) == 0 {
		t.Fatal("no overlay under deploy/kubernetes/overlays")
	}
	return builds
}

type unexpectedKind struct {
	dir string
	obj runtime.Object
}

func (e *unexpectedKind) Error() string {
	return rel(e.dir) + ": unexpected kind " + e.obj.GetObjectKind().GroupVersionKind().String()
}

func TestOverlaysBuild(t *testing.T) {
	for name, b := range overlays(t) {
		if len(b.deployments) != 1 {
			t.Errorf("%s: %d Deployments, want 1", name, len(b.deployments))
		}
		if len(b.rules) != 1 {
			t.Errorf("%s: %d PrometheusRules, want 1", name, len(b.rules))
		}
		if len(b.serviceMonitors)+len(b.podMonitors) != 1 {
			t.Errorf("%s: %d ServiceMonitors and %d PodMonitors, want one monitor", name, len(b.serviceMonitors), len(b.podMonitors))
		}
	}
}

// TestExporterContainer checks the exporter container of every overlay:
// hardening, resources, probes, port, flags and where the DSN comes from.
func TestExporterContainer(t *testing.T) {
	flags := binaryFlags(t)
	for name, b := range overlays(t) {
		for _, d := range b.deployments {
			t.Run(name, func(t *testing.T) { checkExporterPod(t, &d.Spec.Template.Spec, flags) })
		}
	}
}

func checkExporterPod(t *testing.T, pod *corev1.PodSpec, flags map[string]bool) {
	var c *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == exporterContainer {
			if c != nil {
				t.Fatal("two exporter containers")
			}
			c = &pod.Containers[i]
		}
	}
	if c == nil {
		t.Fatal("no exporter container")
	}
	if pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken {
		t.Error("service account token mounted")
	}

	// Hardening, at the container level so that it holds in any pod.
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("no securityContext")
	}
	if !isTrue(sc.RunAsNonRoot) {
		t.Error("runAsNonRoot not true")
	}
	// 65532, the image's user; a SQLite sidecar runs as Ironic's user
	// instead (TestMetal3Sidecars says why).
	if sc.RunAsUser == nil || *sc.RunAsUser == 0 || *sc.RunAsUser != 65532 && !sqliteSidecar(c) {
		t.Error("runAsUser is not the fixed UID 65532 of the image")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation not false")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem not true")
	}
	if isTrue(sc.Privileged) {
		t.Error("privileged")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Error("capabilities: want drop [ALL] and nothing added")
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("seccompProfile not RuntimeDefault")
	}

	// Resources: requests and limits of CPU and memory.
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl[r]; !ok || q.IsZero() {
				t.Errorf("resource %s: missing request or limit", r)
			}
		}
	}
	if c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) < 0 {
		t.Error("memory limit below request")
	}

	// Flags: each one known to the binary, given once.
	seen := map[string]bool{}
	listen := ":10067"
	probeListen := ""
	dsnFile := ""
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !flags[name] {
			t.Errorf("argument %q is not a flag of the exporter", a)
		}
		if seen[name] && name != "web.listen-address" {
			t.Errorf("flag --%s given twice", name)
		}
		seen[name] = true
		switch name {
		case "web.listen-address":
			listen = value
		case "web.probe-listen-address":
			probeListen = value
		case "db.dsn-file":
			dsnFile = value
		case "db.dsn":
			t.Error("--db.dsn on the command line: the DSN belongs in a Secret")
		}
	}
	if len(c.Command) > 0 {
		t.Errorf("command %q overrides the image's entrypoint", c.Command)
	}
	for _, f := range []string{"ironic.hash-ring-algorithm", "ironic.heartbeat-timeout", "ironic.hash-partition-exponent"} {
		if !seen[f] {
			t.Errorf("--%s not set explicitly: it must match ironic.conf", f)
		}
	}

	// Port and probes: liveness on /healthz, readiness on /readyz (alone in
	// its pod; a sidecar has none), on the named port the exporter listens
	// on.
	_, port, _ := strings.Cut(listen, ":")
	for strings.Contains(port, ":") { // [::]:10067
		_, port, _ = strings.Cut(port, ":")
	}
	var portName string
	for _, p := range c.Ports {
		if itoa(p.ContainerPort) == port {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Fatalf("no container port %s (--web.listen-address=%s)", port, listen)
	}
	// Probes go to --web.probe-listen-address, which --web.config.file
	// (TLS, basic auth) does not guard: a probe on the main port would get
	// 401 once authentication is on (TestProbesWithTLSAndBasicAuth in cmd/).
	if probeListen == "" {
		t.Fatal("no --web.probe-listen-address: the probes would break when --web.config.file turns on TLS or basic auth")
	}
	probePortName := ""
	_, probePort, _ := strings.Cut(probeListen, ":")
	for _, p := range c.Ports {
		if itoa(p.ContainerPort) == probePort {
			probePortName = p.Name
		}
	}
	if probePortName == "" || probePortName == portName {
		t.Fatalf("no container port of its own for --web.probe-listen-address=%s", probeListen)
	}
	checkProbe(t, "liveness", c.LivenessProbe, "/healthz", probePortName)
	if len(pod.Containers) == 1 {
		checkProbe(t, "readiness", c.ReadinessProbe, "/readyz", probePortName)
	} else if c.ReadinessProbe != nil {
		// A sidecar's readiness is the pod's: an exporter without data
		// would take Ironic out of its Service.
		t.Error("readiness probe on a sidecar")
	}

	// The DSN: exactly one of IRONIC_EXPORTER_DB_DSN or --db.dsn-file. A file
	// must be a read-only mount of a Secret; a literal value is allowed only
	// for SQLite (it has no password), and its directory must be mounted
	// read-only.
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "IRONIC_EXPORTER_DB_DSN" {
			env = &c.Env[i]
		}
	}
	switch {
	case env != nil && dsnFile != "":
		t.Error("both IRONIC_EXPORTER_DB_DSN and --db.dsn-file: the exporter refuses to start")
	case env == nil && dsnFile == "":
		t.Error("no DSN")
	case dsnFile != "":
		m, v := mountOf(c, pod, dsnFile)
		switch {
		case m == nil:
			t.Errorf("--db.dsn-file=%s is on no volume", dsnFile)
		case !m.ReadOnly:
			t.Errorf("%s mounted read-write", m.MountPath)
		case v == nil || v.Secret == nil:
			t.Errorf("%s is not a Secret volume", m.MountPath)
		}
	case env.ValueFrom != nil:
		if env.ValueFrom.SecretKeyRef == nil {
			t.Error("IRONIC_EXPORTER_DB_DSN not from a Secret")
		}
	default:
		path, ok := strings.CutPrefix(env.Value, "sqlite:///")
		if !ok {
			t.Fatalf("literal DSN %q: only SQLite may be given in clear", env.Value)
		}
		if m, _ := mountOf(c, pod, path); m == nil {
			t.Errorf("SQLite database %s is on no volume", path)
		}
	}
	for _, m := range c.VolumeMounts {
		// SQLite in WAL mode: a reader may have to create the -wal and -shm
		// files (deploy/kubeplay_test.go, TestKubePlayMetal3SQLite).
		if !m.ReadOnly && (!sqliteSidecar(c) || m.MountPath != "/data/db") {
			t.Errorf("volume %s mounted read-write", m.Name)
		}
	}
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path, port string) {
	t.Helper()
	switch {
	case p == nil || p.HTTPGet == nil:
		t.Errorf("%s probe: want an HTTP GET of %s", what, path)
	case p.HTTPGet.Path != path:
		t.Errorf("%s probe on %s, want %s", what, p.HTTPGet.Path, path)
	case p.HTTPGet.Port.String() != port:
		t.Errorf("%s probe on port %s, want %s", what, p.HTTPGet.Port.String(), port)
	case p.TimeoutSeconds >= p.PeriodSeconds && p.PeriodSeconds > 0:
		t.Errorf("%s probe: timeout %ds not below period %ds", what, p.TimeoutSeconds, p.PeriodSeconds)
	}
}

// mountOf finds the mount of c holding path and its volume.
func mountOf(c *corev1.Container, pod *corev1.PodSpec, path string) (*corev1.VolumeMount, *corev1.Volume) {
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			for j := range pod.Volumes {
				if pod.Volumes[j].Name == m.Name {
					return m, &pod.Volumes[j]
				}
			}
			return m, nil
		}
	}
	return nil, nil
}

// TestStandalone: two replicas spread over nodes, a PDB, a Service and a
// ServiceMonitor that select them, and the job the alerts expect.
func TestStandalone(t *testing.T) {
	b := overlays(t)["standalone"]
	if b == nil {
		t.Fatal("no standalone overlay")
	}
	d := b.deployments[0]
	podLabels := labels.Set(d.Spec.Template.Labels)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Error("replicas: want 2")
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(podLabels) {
		t.Error("the Deployment's selector does not select its pods")
	}
	aff := d.Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("no pod anti-affinity")
	}
	term := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("anti-affinity topology key %q", term.TopologyKey)
	}
	if s, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil || !s.Matches(podLabels) {
		t.Error("anti-affinity does not select the exporter's pods")
	}

	if len(b.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets", len(b.pdbs))
	}
	pdb := b.pdbs[0]
	if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !s.Matches(podLabels) {
		t.Error("the PodDisruptionBudget does not select the exporter's pods")
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
		t.Error("PodDisruptionBudget: want 1 <= minAvailable < replicas")
	}

	if len(b.services) != 1 {
		t.Fatalf("%d Services", len(b.services))
	}
	svc := b.services[0]
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Selector) == 0 {
		t.Error("the Service does not select the exporter's pods")
	}
	c := container(t, &d.Spec.Template.Spec, exporterContainer)
	for _, p := range svc.Spec.Ports {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.TargetPort.String() || itoa(cp.ContainerPort) == p.TargetPort.String()
		}) {
			t.Errorf("Service port %s: target %s is no container port", p.Name, p.TargetPort.String())
		}
	}
	if d.Spec.Template.Spec.ServiceAccountName == "" || len(b.serviceAccounts) != 1 || b.serviceAccounts[0].Name != d.Spec.Template.Spec.ServiceAccountName {
		t.Error("the pods do not run as the overlay's ServiceAccount")
	}

	sm := b.serviceMonitors[0]
	if s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector); err != nil || !s.Matches(labels.Set(svc.Labels)) {
		t.Error("the ServiceMonitor does not select the Service")
	}
	for _, e := range sm.Spec.Endpoints {
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
			t.Errorf("ServiceMonitor endpoint port %q is no port of the Service", e.Port)
		}
		checkScrapeTimes(t, string(e.Interval), string(e.ScrapeTimeout))
	}
	// A ServiceMonitor without jobLabel names the job after the Service.
	if sm.Spec.JobLabel != "" {
		t.Error("ServiceMonitor jobLabel set: the alert rules select job=" + alertJob(t))
	}
	if svc.Name != alertJob(t) {
		t.Errorf("Prometheus job would be %q, the alert rules select %q", svc.Name, alertJob(t))
	}
}

// TestMetal3Sidecars: the sidecar joins Ironic's pod without disturbing it,
// reads SQLite from a volume the ironic container writes, and is scraped
// under the job the alerts expect.
//
// The SQLite sidecar runs as Ironic's user and group on a read-write mount:
// ironic-image puts /data/db/ironic.sqlite in WAL mode, and a reader that
// finds no -wal/-shm file (Ironic not started yet, or between its
// connections) creates them. On a read-only mount that open fails ("attempt
// to write a readonly database (1544)"); created by another user with the
// database's mode 0644, they would leave Ironic unable to write. As Ironic's
// own user the files are Ironic's; the exporter still opens the database
// read-only. TestKubePlayMetal3SQLite runs it.
func TestMetal3Sidecars(t *testing.T) {
	example := decodeFile(t, filepath.Join(kubeDir(), "examples", "metal3-ironic", "ironic.yaml"))[0].(*appsv1.Deployment)
	for _, name := range []string{"metal3-sqlite", "metal3-mariadb"} {
		t.Run(name, func(t *testing.T) {
			b := overlays(t)[name]
			if b == nil {
				t.Fatal("no such overlay")
			}
			d := b.deployments[0]
			pod := &d.Spec.Template.Spec
			// Nothing of the original pod is lost.
			for _, orig := range example.Spec.Template.Spec.Containers {
				got := container(t, pod, orig.Name)
				for _, m := range orig.VolumeMounts {
					if !slices.ContainsFunc(got.VolumeMounts, func(g corev1.VolumeMount) bool {
						return g.Name == m.Name && g.MountPath == m.MountPath && g.ReadOnly == m.ReadOnly && g.SubPath == m.SubPath
					}) {
						t.Errorf("container %s lost its mount %s", orig.Name, m.MountPath)
					}
				}
				if got.Image != orig.Image || !slices.Equal(got.Command, orig.Command) {
					t.Errorf("container %s changed", orig.Name)
				}
			}
			for _, v := range example.Spec.Template.Spec.Volumes {
				if !slices.ContainsFunc(pod.Volumes, func(w corev1.Volume) bool { return w.Name == v.Name }) {
					t.Errorf("volume %s lost", v.Name)
				}
			}
			c := container(t, pod, exporterContainer)
			if !slices.Contains(c.Args, "--ironic.hash-ring-algorithm=sha256") {
				t.Error("Metal3 configures hash_ring_algorithm = sha256")
			}
			// Host network: the listen port must not be Metal3's
			// ironic-prometheus-exporter port.
			if pod.HostNetwork && slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return itoa(p.ContainerPort) == oldPort }) {
				t.Errorf("port %s on the host network collides with ironic-prometheus-exporter", oldPort)
			}
			if name == "metal3-sqlite" {
				env := c.Env[slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "IRONIC_EXPORTER_DB_DSN" })]
				path := strings.TrimPrefix(env.Value, "sqlite:///")
				mine, vol := mountOf(c, pod, path)
				theirs, _ := mountOf(container(t, pod, "ironic"), pod, path)
				switch {
				case mine == nil || theirs == nil:
					t.Fatal("the SQLite database is not on a volume of both containers")
				case mine.Name != theirs.Name || mine.MountPath != theirs.MountPath:
					t.Error("the sidecar and ironic mount the database differently")
				case theirs.ReadOnly:
					t.Error("ironic cannot write its database")
				case vol == nil || vol.EmptyDir == nil:
					t.Error("the database volume is not an emptyDir")
				}
				ironic := container(t, pod, "ironic")
				if c.SecurityContext.RunAsUser == nil || ironic.SecurityContext == nil || ironic.SecurityContext.RunAsUser == nil ||
					*c.SecurityContext.RunAsUser != *ironic.SecurityContext.RunAsUser ||
					c.SecurityContext.RunAsGroup == nil || *c.SecurityContext.RunAsGroup != *ironic.SecurityContext.RunAsGroup {
					t.Error("the SQLite sidecar does not run as Ironic's user and group")
				}
				if env.Value != "sqlite:////data/db/ironic.sqlite" {
					t.Errorf("DSN %q, Metal3's ironic image uses sqlite:////data/db/ironic.sqlite", env.Value)
				}
			}

			if len(b.podMonitors) != 1 {
				t.Fatal("no PodMonitor")
			}
			pm := b.podMonitors[0]
			checkMetal3Monitoring(t, d, pm, b.rules)
			for _, e := range pm.Spec.PodMetricsEndpoints {
				if e.Port == nil || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == *e.Port }) {
					t.Error("PodMonitor endpoint port is no port of the exporter container")
				}
				checkScrapeTimes(t, string(e.Interval), string(e.ScrapeTimeout))
				job := ""
				for _, r := range e.RelabelConfigs {
					if r.TargetLabel == "job" && r.Replacement != nil && len(r.SourceLabels) == 0 {
						job = *r.Replacement
					}
				}
				if job != alertJob(t) {
					t.Errorf("PodMonitor job %q, the alert rules select %q", job, alertJob(t))
				}
			}
		})
	}
}

// checkMetal3Monitoring: the sidecar patch reached baremetal-operator's
// Deployment under its prefix and namespace (the stand-in is layered as
// ironic-deployment/default at 02aa5059: baremetal-operator-ironic in
// baremetal-operator-system); the PodMonitor and the PrometheusRule, which
// the components add at the top level, are in Ironic's namespace, and the
// PodMonitor selects Ironic's pod there.
func checkMetal3Monitoring(t *testing.T, d *appsv1.Deployment, pm *monitoringv1.PodMonitor, rules []*monitoringv1.PrometheusRule) {
	t.Helper()
	if d.Namespace == "" || !strings.HasPrefix(d.Name, "baremetal-operator-") {
		t.Errorf("Ironic's Deployment is %s/%s, not baremetal-operator's prefixed, namespaced one", d.Namespace, d.Name)
	}
	if _, native := exporterOf(&d.Spec.Template.Spec); native || !slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == exporterContainer }) {
		t.Error("the sidecar patch did not reach Ironic's Deployment")
	}
	if pm.Namespace != d.Namespace {
		t.Errorf("PodMonitor in namespace %q, Ironic in %q: it selects no pod", pm.Namespace, d.Namespace)
	}
	if ns := pm.Spec.NamespaceSelector; !ns.Any && !slices.Contains(ns.MatchNames, d.Namespace) {
		t.Errorf("PodMonitor namespaceSelector %v does not include Ironic's namespace %q", ns.MatchNames, d.Namespace)
	}
	for _, r := range rules {
		if r.Namespace != d.Namespace {
			t.Errorf("PrometheusRule in namespace %q, Ironic in %q", r.Namespace, d.Namespace)
		}
	}
	if s, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector); err != nil || !s.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Error("the PodMonitor does not select Ironic's pod")
	}
}

// TestMetal3TopLevel builds the kustomization a user writes, baremetal-operator's
// ironic-deployment as a resource and our components, with and without the
// top-level namespace: with it everything is in Ironic's namespace; without
// it the PodMonitor and PrometheusRule get none (kubectl's namespace at
// apply time), and the PodMonitor's namespaceSelector still finds Ironic.
// The resource is the stand-in, and baremetal-operator's own
// ironic-deployment/default when ICE_BMO names a baremetal-operator tree
// (it is not in this repository).
func TestMetal3TopLevel(t *testing.T) {
	bases := map[string]string{"stand-in": filepath.Join(kubeDir(), "examples", "metal3-ironic")}
	if bmo := os.Getenv("ICE_BMO"); bmo != "" {
		bases["baremetal-operator"] = filepath.Join(bmo, "ironic-deployment", "default")
	}
	for name, base := range bases {
		for _, withNS := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/namespace=%v", name, withNS), func(t *testing.T) {
				dir := t.TempDir()
				k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
				if withNS {
					k += "namespace: baremetal-operator-system\n"
				}
				rel := func(p string) string { // kustomize takes no absolute root
					r, err := filepath.Rel(dir, p)
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				k += "resources:\n  - " + rel(base) + "\ncomponents:\n  - " + rel(filepath.Join(kubeDir(), "components", "sidecar-sqlite")) +
					"\n  - " + rel(filepath.Join(kubeDir(), "components", "prometheus-rules")) + "\n"
				if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
					t.Fatal(err)
				}
				opts := krusty.MakeDefaultOptions()
				opts.LoadRestrictions = types.LoadRestrictionsNone
				rm, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
				if err != nil {
					t.Fatal(err)
				}
				var d *appsv1.Deployment
				var pm *monitoringv1.PodMonitor
				var rules []*monitoringv1.PrometheusRule
				for _, res := range rm.Resources() {
					y, err := res.AsYAML()
					if err != nil {
						t.Fatal(err)
					}
					switch res.GetKind() {
					case "Deployment":
						d = &appsv1.Deployment{}
						err = yaml.Unmarshal(y, d)
					case "PodMonitor":
						pm = &monitoringv1.PodMonitor{}
						err = yaml.Unmarshal(y, pm)
					case "PrometheusRule":
						r := &monitoringv1.PrometheusRule{}
						err = yaml.Unmarshal(y, r)
						rules = append(rules, r)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if d == nil || pm == nil || len(rules) != 1 {
					t.Fatal("no Deployment, PodMonitor or PrometheusRule")
				}
				if withNS {
					checkMetal3Monitoring(t, d, pm, rules)
					return
				}
				if pm.Namespace != "" || rules[0].Namespace != "" {
					t.Errorf("without the top-level namespace: PodMonitor in %q, rule in %q", pm.Namespace, rules[0].Namespace)
				}
				if !slices.Contains(pm.Spec.NamespaceSelector.MatchNames, d.Namespace) {
					t.Errorf("PodMonitor namespaceSelector %v, Ironic in %q", pm.Spec.NamespaceSelector.MatchNames, d.Namespace)
				}
			})
		}
	}
}

// sqliteSidecar tells a container that reads Ironic's SQLite database.
func sqliteSidecar(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "IRONIC_EXPORTER_DB_DSN" && strings.HasPrefix(e.Value, "sqlite:")
	})
}

func checkScrapeTimes(t *testing.T, interval, timeout string) {
	t.Helper()
	if interval == "" || timeout == "" {
		t.Error("scrape interval and timeout must be set")
		return
	}
	i, err1 := parseDuration(interval)
	to, err2 := parseDuration(timeout)
	if err1 != nil || err2 != nil || to >= i {
		t.Errorf("scrape timeout %s must be below the interval %s", timeout, interval)
	}
}

// alertJob is the job every alert expression selects.
func alertJob(t *testing.T) string {
	t.Helper()
	files, err := RuleFiles(filepath.Join(root, AlertsDir))
	if err != nil || len(files) == 0 {
		t.Skip("alerts/ has no rule file yet")
	}
	groups, err := LoadRuleGroups(files)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]bool{}
	re := regexp.MustCompile(`\bjob\s*=\s*"([^"]*)"`)
	for _, g := range groups {
		for _, r := range g.Rules {
			for _, m := range re.FindAllStringSubmatch(r.Expr.String(), -1) {
				jobs[m[1]] = true
			}
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("the alert rules select jobs %v, want exactly one", jobs)
	}
	for j := range jobs {
		return j
	}
	return ""
}

func container(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func decodeFile(t *testing.T, p string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return decodeDocs(t, rel(p), b)
}

// binaryFlags builds the exporter and collects the long flags its --help
// lists (kingpin, exporter-toolkit and promslog flags alike).
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func exporterBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ice-deploy-test")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "ironic_conductor_exporter")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/ironic_conductor_exporter")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = &buildError{err, out}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

func binaryFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(exporterBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`--(\[no-\])?([a-z0-9][a-z0-9.-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[2]] = true
		if m[1] != "" {
			flags["no-"+m[2]] = true
		}
	}
	for _, f := range []string{"db.dsn", "db.dsn-file", "web.listen-address", "ironic.hash-ring-algorithm", "log.level"} {
		if !flags[f] {
			t.Fatalf("--help does not list --%s: cannot read the flags\n%s", f, out)
		}
	}
	return flags
}

func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

func isTrue(b *bool) bool { return b != nil && *b }

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func parseDuration(s string) (model.Duration, error) { return model.ParseDuration(s) }

// TestPrometheusReleaseLabel: every ServiceMonitor, PodMonitor and
// PrometheusRule the overlays build carries the release label
// kube-prometheus-stack's selectors match (components/prometheus-release),
// so that its Prometheus does not ignore them.
func TestPrometheusReleaseLabel(t *testing.T) {
	for name, b := range overlays(t) {
		var objs []metav1.Object
		for _, o := range b.serviceMonitors {
			objs = append(objs, o)
		}
		for _, o := range b.podMonitors {
			objs = append(objs, o)
		}
		for _, o := range b.rules {
			objs = append(objs, o)
		}
		if len(objs) == 0 {
			t.Errorf("%s: no monitor or rule", name)
		}
		for _, o := range objs {
			if o.GetLabels()["release"] != "kube-prometheus-stack" {
				t.Errorf("%s: %s has no release label (labels %v)", name, o.GetName(), o.GetLabels())
			}
		}
	}
}
