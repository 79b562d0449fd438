package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The checks of the exporter beside ironic-standalone-operator's Ironic,
// on the operator's objects as operator_model_test.go builds them.

// operatorResources are the Ironic resources the tests build the
// operator's objects from: the shipped example, and the override routes
// that do not work (testdata/operator), each with why it fails.
var operatorResources = []struct {
	file string
	// why: a part of each problem the route must show ("" for none).
	why []string
}{
	{file: "ironic-standalone-operator/ironic.yaml"},
	{file: "testdata/operator/sqlite-container.yaml", why: []string{"own filesystem"}},
	{file: "testdata/operator/mariadb-container.yaml", why: []string{"never completes", "dropped"}},
	{file: "testdata/operator/mariadb-native-sidecar.yaml", why: []string{"never exits", "dropped"}},
}

func readOperatorCR(t *testing.T, p string) operatorIronic {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var ir operatorIronic
	if err := yaml.UnmarshalStrict(b, &ir); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if ir.APIVersion != "ironic.metal3.io/v1alpha1" || ir.Kind != "Ironic" || ir.Metadata.Name == "" {
		t.Fatalf("%s: %s %s %q is no Ironic resource", p, ir.APIVersion, ir.Kind, ir.Metadata.Name)
	}
	return ir
}

// exporterOf is the exporter container of an operator pod and whether it
// is an init container.
func exporterOf(pod *corev1.PodSpec) (c *corev1.Container, init bool) {
	for i := range pod.Containers {
		if pod.Containers[i].Name == exporterContainer {
			return &pod.Containers[i], false
		}
	}
	for i := range pod.InitContainers {
		if pod.InitContainers[i].Name == exporterContainer {
			return &pod.InitContainers[i], true
		}
	}
	return nil, false
}

func overrideOf(ir operatorIronic) *corev1.Container {
	if ir.Spec.Overrides == nil {
		return nil
	}
	for _, cs := range [][]corev1.Container{ir.Spec.Overrides.Containers, ir.Spec.Overrides.InitContainers} {
		for i := range cs {
			if cs[i].Name == exporterContainer {
				return &cs[i]
			}
		}
	}
	return nil
}

// exporterReachesDB says why the exporter cannot read the database Ironic
// writes in this pod, "" when it can. SQLite: the file's directory must be
// a volume the ironic container mounts at the same path. A server: Ironic
// must use one (spec.database), and the DSN must come from a Secret.
func exporterReachesDB(ir operatorIronic, pod *corev1.PodSpec, c *corev1.Container) string {
	var dsn *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "IRONIC_EXPORTER_DB_DSN" {
			dsn = &c.Env[i]
		}
	}
	if dsn == nil {
		return "no IRONIC_EXPORTER_DB_DSN"
	}
	file, isSQLite := strings.CutPrefix(dsn.Value, "sqlite:///")
	if !isSQLite {
		if ir.Spec.Database == nil {
			return "a database server DSN while Ironic, without spec.database, runs on SQLite"
		}
		if dsn.ValueFrom == nil || dsn.ValueFrom.SecretKeyRef == nil {
			return "the DSN, which holds a password, is not from a Secret"
		}
		return ""
	}
	if ir.Spec.Database != nil {
		return "a SQLite DSN while Ironic runs on spec.database"
	}
	var ironic *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == "ironic" {
			ironic = &pod.Containers[i]
		}
	}
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(filepath.Dir(file)+"/", strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		if ironic != nil && slices.ContainsFunc(ironic.VolumeMounts, func(im corev1.VolumeMount) bool {
			return im.Name == m.Name && im.MountPath == m.MountPath && im.SubPath == m.SubPath
		}) {
			return ""
		}
	}
	return fmt.Sprintf("%s is in the ironic container's own filesystem: no volume the exporter mounts holds it there (the operator at %s mounts only /shared in Ironic's container)", file, operatorCommit)
}

// overrideProblems lists why the exporter as an override of ir does not
// work in the operator's objects; none when ir has no such override.
func overrideProblems(ir operatorIronic, objs operatorObjects) []string {
	o := overrideOf(ir)
	if o == nil {
		return nil
	}
	var out []string
	pod := &objs.ironic.Spec.Template.Spec
	c, init := exporterOf(pod)
	if c == nil {
		return []string{"the override is not in the operator's pod"}
	}
	if why := exporterReachesDB(ir, pod, c); why != "" {
		out = append(out, "the exporter cannot read Ironic's database: "+why)
	}
	// What mergeContainers dropped of the override.
	var dropped []string
	if len(o.Args) > 0 && len(c.Args) == 0 {
		dropped = append(dropped, "args")
	}
	if (len(o.Resources.Limits) > 0 || len(o.Resources.Requests) > 0) && len(c.Resources.Limits)+len(c.Resources.Requests) == 0 {
		dropped = append(dropped, "resources")
	}
	if o.RestartPolicy != nil && c.RestartPolicy == nil {
		dropped = append(dropped, "restartPolicy")
	}
	if o.ImagePullPolicy != "" && c.ImagePullPolicy == "" {
		dropped = append(dropped, "imagePullPolicy")
	}
	if o.StartupProbe != nil && c.StartupProbe == nil {
		dropped = append(dropped, "startupProbe")
	}
	if len(dropped) > 0 {
		out = append(out, "the operator dropped the override's "+strings.Join(dropped, ", ")+" (utils.go mergeContainers)")
	}
	native := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	if init && !native {
		out = append(out, "the exporter is an init container that never exits: Ironic's containers never start")
	}
	for _, j := range objs.jobs {
		jc, jinit := exporterOf(&j.Spec.Template.Spec)
		switch {
		case jc == nil:
		case !jinit:
			out = append(out, "Job "+j.Name+": the exporter container never exits, so the Job never completes and the operator never deploys Ironic")
		case jc.RestartPolicy == nil:
			out = append(out, "Job "+j.Name+": the exporter init container never exits, so the migration never runs")
		}
	}
	return out
}

// TestOperatorOverrideRoutes: the exporter as a container of the
// operator's pods works in none of the ways spec.overrides offers, each
// for the reason ironic.yaml gives.
func TestOperatorOverrideRoutes(t *testing.T) {
	for _, r := range operatorResources {
		t.Run(filepath.Base(r.file), func(t *testing.T) {
			ir := readOperatorCR(t, filepath.Join(root, "deploy", r.file))
			problems := overrideProblems(ir, operatorModel(t, ir))
			for _, p := range problems {
				t.Log(p)
			}
			if len(r.why) == 0 && len(problems) > 0 {
				t.Errorf("%d problems", len(problems))
			}
			for _, w := range r.why {
				if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem says %q", w)
				}
			}
		})
	}
}

// TestOperator checks the shipped route (ICE_OPERATOR_CR names another
// Ironic resource to check instead): Ironic on spec.database, no override
// of the operator's pods, and the exporter's Deployment of
// overlays/ironic-standalone-operator in the Ironic's namespace with
// ironic-image's hash ring algorithm, its DSN from the Secret.
func TestOperator(t *testing.T) {
	file := filepath.Join(root, "deploy", "ironic-standalone-operator", "ironic.yaml")
	if p := os.Getenv("ICE_OPERATOR_CR"); p != "" {
		file = p
	}
	ir := readOperatorCR(t, file)
	objs := operatorModel(t, ir)
	for _, p := range overrideProblems(ir, objs) {
		t.Error(p)
	}
	if ir.Spec.Database == nil {
		t.Fatal("no spec.database: with the operator's SQLite nothing but Ironic can read the database")
	}
	if c, _ := exporterOf(&objs.ironic.Spec.Template.Spec); c != nil {
		t.Error("the exporter is in the operator's pod: use overlays/ironic-standalone-operator")
	}
	b := overlays(t)["ironic-standalone-operator"]
	if b == nil || len(b.deployments) != 1 {
		t.Fatal("no Deployment in overlays/ironic-standalone-operator")
	}
	d := b.deployments[0]
	for _, o := range []metav1.Object{d, b.services[0], b.serviceMonitors[0], b.rules[0], b.pdbs[0], b.serviceAccounts[0]} {
		if o.GetNamespace() != ir.Metadata.Namespace {
			t.Errorf("%s in namespace %q, the Ironic in %q", o.GetName(), o.GetNamespace(), ir.Metadata.Namespace)
		}
	}
	c := container(t, &d.Spec.Template.Spec, exporterContainer)
	if got := flagValue(c.Args, "ironic.hash-ring-algorithm"); got != "sha256" {
		t.Errorf("--ironic.hash-ring-algorithm=%s, ironic-image sets sha256", got)
	}
	if flagValue(c.Args, "db.dsn-file") == "" {
		t.Error("the DSN is not read from the Secret's file")
	}
}
