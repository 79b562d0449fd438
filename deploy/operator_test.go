package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// The exporter beside Ironic run by ironic-standalone-operator, which
// builds the pod itself from the Ironic resource and reverts any patch:
// deploy/ironic-standalone-operator/ironic.yaml gives the container through
// spec.overrides. operatorPod builds the pod as the operator does, after
// metal3-io/ironic-standalone-operator at c75aa296a52a:
//
//   - pkg/ironic/containers.go newIronicPodTemplate: labels
//     ironic.metal3.io/app=<name>-service, ironic.metal3.io/ironic=<name>,
//     ironic.metal3.io/version; host network; no pod securityContext (no
//     fsGroup); Ironic's containers as 997:994; then applyOverridesToPod;
//   - pkg/ironic/utils.go applyOverridesToPod: an override container or
//     volume replaces the one of the same name, else is appended; labels
//     and annotations merged;
//   - pkg/ironic/utils.go addDataVolumes, applied after the overrides
//     (pkg/ironic/networking_deployment.go): the emptyDirs ironic-data and
//     ironic-tmp, mounted at /data, /conf and /tmp in every container;
//   - pkg/ironic/ironic.go: the Deployment "<name>-service" (a DaemonSet
//     in highAvailability mode) selecting ironic.metal3.io/app.
//
// The Overrides feature gate (api/v1alpha1/features.go) is beta and off by
// default: without --feature-gates=Overrides=true the operator ignores
// spec.overrides, which no test here can show.

// operatorIronic is the part of the Ironic resource the operator's pod
// takes from us, decoded strictly.
type operatorIronic struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Overrides struct {
			Containers []corev1.Container `json:"containers"`
			Volumes    []corev1.Volume    `json:"volumes"`
		} `json:"overrides"`
	} `json:"spec"`
}

func operatorPod(t *testing.T, ir operatorIronic) *appsv1.Deployment {
	t.Helper()
	name := ir.Metadata.Name + "-service"
	ironicSC := &corev1.SecurityContext{RunAsUser: ptr(int64(997)), RunAsGroup: ptr(int64(994)),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			"ironic.metal3.io/app": name, "ironic.metal3.io/ironic": ir.Metadata.Name, "ironic.metal3.io/version": "latest",
		}},
		Spec: corev1.PodSpec{
			HostNetwork:                  true,
			AutomountServiceAccountToken: ptr(false),
			Containers: []corev1.Container{
				{Name: "ironic", Image: "quay.io/metal3-io/ironic", SecurityContext: ironicSC},
				{Name: "httpd", Image: "quay.io/metal3-io/ironic", SecurityContext: ironicSC},
			},
		},
	}
	// applyOverridesToPod.
	for _, o := range ir.Spec.Overrides.Containers {
		if i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == o.Name }); i >= 0 {
			pod.Spec.Containers[i] = o
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, o)
		}
	}
	for _, o := range ir.Spec.Overrides.Volumes {
		if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == o.Name }); i >= 0 {
			pod.Spec.Volumes[i] = o
		} else {
			pod.Spec.Volumes = append(pod.Spec.Volumes, o)
		}
	}
	// addDataVolumes.
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "ironic-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "ironic-tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts,
			corev1.VolumeMount{Name: "ironic-data", MountPath: "/data"},
			corev1.VolumeMount{Name: "ironic-data", MountPath: "/conf"},
			corev1.VolumeMount{Name: "ironic-tmp", MountPath: "/tmp"})
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ir.Metadata.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ironic.metal3.io/app": name}},
			Template: pod,
		},
	}
	return d
}

func ptr[T any](v T) *T { return &v }

func readOperatorFiles(t *testing.T) (operatorIronic, *monitoringv1.PodMonitor) {
	t.Helper()
	dir := filepath.Join(root, "deploy", "ironic-standalone-operator")
	b, err := os.ReadFile(filepath.Join(dir, "ironic.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ir operatorIronic
	if err := yaml.UnmarshalStrict(b, &ir); err != nil {
		t.Fatalf("ironic.yaml: %v", err)
	}
	if ir.APIVersion != "ironic.metal3.io/v1alpha1" || ir.Kind != "Ironic" || ir.Metadata.Name == "" {
		t.Fatalf("ironic.yaml: %s %s %q is no Ironic resource", ir.APIVersion, ir.Kind, ir.Metadata.Name)
	}
	objs := decodeFile(t, filepath.Join(dir, "podmonitor.yaml"))
	pm, ok := objs[0].(*monitoringv1.PodMonitor)
	if len(objs) != 1 || !ok {
		t.Fatal("podmonitor.yaml: want one PodMonitor")
	}
	return ir, pm
}

// TestOperatorPod checks the operator's pod with our override statically:
// the exporter container's own checks, no mount path the operator adds
// twice, the PodMonitor selecting the pod in the Ironic's namespace.
func TestOperatorPod(t *testing.T) {
	ir, pm := readOperatorFiles(t)
	d := operatorPod(t, ir)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, exporterContainer)
	// The exporter's own checks, on a copy whose operator-added mounts are
	// read-only: the operator makes them read-write, which no Ironic
	// resource changes (the database's directory must be anyway).
	cp := d.DeepCopy()
	ec := container(t, &cp.Spec.Template.Spec, exporterContainer)
	for i, m := range ec.VolumeMounts {
		if m.Name == "ironic-data" || m.Name == "ironic-tmp" {
			ec.VolumeMounts[i].ReadOnly = true
		}
	}
	checkExporterPod(t, &cp.Spec.Template.Spec, binaryFlags(t))
	seen := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if seen[m.MountPath] {
			t.Errorf("mount path %s twice: the operator mounts /data, /conf and /tmp itself", m.MountPath)
		}
		seen[m.MountPath] = true
	}
	ironic := container(t, pod, "ironic")
	if *c.SecurityContext.RunAsUser != *ironic.SecurityContext.RunAsUser || *c.SecurityContext.RunAsGroup != *ironic.SecurityContext.RunAsGroup {
		t.Error("the sidecar does not run as Ironic's user and group")
	}
	if pm.Namespace != ir.Metadata.Namespace {
		t.Errorf("PodMonitor in %q, the Ironic in %q", pm.Namespace, ir.Metadata.Namespace)
	}
	if s, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector); err != nil || s.Empty() || !s.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Error("the PodMonitor does not select the operator's pod")
	}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if e.Port == nil || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == *e.Port }) {
			t.Error("PodMonitor endpoint port is no port of the exporter container")
		}
	}
}

// TestKubePlayOperatorPod runs that pod on Ironic's SQLite as ironic-image
// leaves it in the operator's ironic-data volume (db/ironic.sqlite, WAL,
// 997:994), the test playing Ironic's writes.
func TestKubePlayOperatorPod(t *testing.T) {
	needPodman(t)
	testenv.Need(t, testenv.IronicPython)
	ir, _ := readOperatorFiles(t)
	d := operatorPod(t, ir)
	doc, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, p := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(tmp, "ironic-data")
	db := filepath.Join(data, "db")
	if err := os.MkdirAll(db, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(db, ironicUID, ironicGID); err != nil {
		t.Fatal(err)
	}
	file := sqliteAsIronic(t, db)
	p := kubePlay(t, "o", doc, playEnv{tmp: tmp, emptyDirs: map[string]string{"ironic-data": data}})
	checkPlayed(t, p, fixtureNodes)
	c := container(t, &p.pod, exporterContainer)
	ironicKeepsWriting(t, "http://127.0.0.1:"+port(flagValue(c.Args, "web.listen-address"))+"/metrics", file)
}
