package deploy

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The exporter beside Ironic run by ironic-standalone-operator, which
// builds its pods itself from the Ironic resource and reverts any patch:
// deploy/ironic-standalone-operator/ironic.yaml gives the container through
// spec.overrides.
//
// The operator's module is not served by the Go module proxy, so its code
// cannot run here: operatorModel follows it by hand, line by line, at
// metal3-io/ironic-standalone-operator c75aa296a52a, for what the
// exporter depends on (containers, volumes, mounts, labels, the Jobs):
//
//   - pkg/ironic/containers.go buildIronicVolumesAndMounts (534-624): the
//     volumes ironic-shared (emptyDir, mounted at /shared) and ironic-auth
//     (the API Secret; mounted at /auth/ironic-rpc only in
//     highAvailability), and with spec.database databaseClientMounts
//     (493-528): auth-mariadb at /auth/mariadb, cert-mariadb at
//     /certs/ca/mariadb when tlsCertificateName is set;
//   - containers.go newIronicPodTemplate (995-1160): the init container
//     ramdisk-downloader (/shared) unless deployRamdisk.disableDownloader;
//     the containers ironic and httpd (those mounts) and ramdisk-logs
//     (/shared); labels ironic.metal3.io/app=<name>-service,
//     ironic.metal3.io/ironic=<name>, ironic.metal3.io/version; host
//     network; no service account token; then applyOverridesToPod, and
//     NOT addDataVolumes: nothing of Ironic's /data (its SQLite database,
//     /data/db) is a volume;
//   - pkg/ironic/utils.go applyOverridesToPod (421-436) with
//     applyContainerOverrides / applyVolumeOverrides (343-419): an override
//     container, init container or volume replaces the one of the same
//     name, else is appended; labels and annotations merged;
//   - pkg/ironic/upgrades.go newMigrationTemplate (36-104), with
//     spec.database: the Jobs <name>-pre-<from>-to-<to> (container
//     database-upgrade) and <name>-post-... (online-data-migrations), mounts
//     auth-mariadb, cert-mariadb, ironic-shared, then addDataVolumes
//     (utils.go 297-330: ironic-data at /data and /conf, ironic-tmp at /tmp,
//     in the containers present then), then applyOverridesToPod: the
//     overrides land in the Jobs' pods too; restartPolicy Never;
//   - pkg/ironic/ironic.go ensureIronicDeployment / populateIronicDeployment
//     (81-126) and upgrades.go ensureIronicUpgradeJob: the Deployment
//     "<name>-service" selecting ironic.metal3.io/app, one replica,
//     Recreate, and the Jobs, each created through CreateOrUpdate with
//     utils.go mergePodTemplates (99-123): labels, annotations, volumes,
//     host network, DNS policy, node selector and restart policy of the
//     pod, and of each container only what mergeContainers (64-97) copies:
//     name, image, command, ports, env, envFrom, volumeMounts,
//     securityContext, and the liveness and readiness probes' handlers with
//     updateProbe's timings (251-269: initialDelay 1, timeout 5, failure
//     threshold 12 where unset). Args, resources, restartPolicy,
//     imagePullPolicy and startupProbe are dropped.
//
// The model was checked against the operator's own pkg/ironic (EnsureIronic
// with controller-runtime's fake client, the CRD's defaults applied by the
// API server's structural defaulting) for every resource of
// operatorResources, in the session that wrote it, outside this
// repository: TestOperatorModel repeats that comparison when
// ICE_OPERATOR_OUTPUT names a directory of that output. api/v1alpha1/
// features.go declares an Overrides feature gate that nothing checks:
// spec.overrides applies without it.

const operatorCommit = "c75aa296a52a"

// operatorIronic is the part of the Ironic resource the model reads,
// decoded strictly: a field the model does not know fails the test.
type operatorIronic struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Database *struct {
			CredentialsName    string `json:"credentialsName"`
			Host               string `json:"host"`
			Name               string `json:"name"`
			TLSCertificateName string `json:"tlsCertificateName,omitempty"`
		} `json:"database,omitempty"`
		HighAvailability bool `json:"highAvailability,omitempty"`
		DeployRamdisk    struct {
			DisableDownloader bool `json:"disableDownloader,omitempty"`
		} `json:"deployRamdisk,omitempty"`
		Overrides *struct {
			Annotations    map[string]string  `json:"annotations,omitempty"`
			Labels         map[string]string  `json:"labels,omitempty"`
			Containers     []corev1.Container `json:"containers,omitempty"`
			InitContainers []corev1.Container `json:"initContainers,omitempty"`
			Volumes        []corev1.Volume    `json:"volumes,omitempty"`
		} `json:"overrides,omitempty"`
	} `json:"spec"`
}

// operatorObjects is what the operator makes: Ironic's Deployment and,
// with spec.database, the upgrade Jobs.
type operatorObjects struct {
	ironic *appsv1.Deployment
	jobs   []batchv1.Job
}

func operatorModel(t *testing.T, ir operatorIronic) operatorObjects {
	t.Helper()
	if ir.Spec.HighAvailability {
		t.Fatal("the model has no highAvailability (a DaemonSet of the same pod)")
	}
	name := ir.Metadata.Name + "-service"
	ironicSC := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{RunAsUser: ptr(int64(997)), RunAsGroup: ptr(int64(994)),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	secretVol := func(n, secret string) corev1.Volume {
		return corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr(corev1.SecretVolumeSourceDefaultMode)}}}
	}
	emptyDir := func(n string) corev1.Volume {
		return corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	shared := corev1.VolumeMount{Name: "ironic-shared", MountPath: "/shared"}
	// databaseClientMounts.
	var dbVols []corev1.Volume
	var dbMounts []corev1.VolumeMount
	if db := ir.Spec.Database; db != nil {
		dbVols = append(dbVols, secretVol("auth-mariadb", db.CredentialsName))
		dbMounts = append(dbMounts, corev1.VolumeMount{Name: "auth-mariadb", MountPath: "/auth/mariadb"})
		if db.TLSCertificateName != "" {
			dbVols = append(dbVols, secretVol("cert-mariadb", db.TLSCertificateName))
			dbMounts = append(dbMounts, corev1.VolumeMount{Name: "cert-mariadb", MountPath: "/certs/ca/mariadb"})
		}
	}
	// buildIronicVolumesAndMounts (no TLS, BMC CA or trusted CA here).
	// The API Secret: ensureAPISecret's GenerateSecret (secrets.go 130)
	// names it by generateName "<name>-service-", the API server adding a
	// suffix; "api" stands for that suffix.
	vols := append([]corev1.Volume{emptyDir("ironic-shared"), secretVol("ironic-auth", ir.Metadata.Name+"-service-api")}, dbVols...)
	mounts := append([]corev1.VolumeMount{shared}, dbMounts...)
	// newIronicPodTemplate.
	var inits []corev1.Container
	if !ir.Spec.DeployRamdisk.DisableDownloader {
		inits = append(inits, corev1.Container{Name: "ramdisk-downloader", Image: "quay.io/metal3-io/ironic-ipa-downloader:latest",
			VolumeMounts: []corev1.VolumeMount{shared}, SecurityContext: ironicSC()})
	}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			"ironic.metal3.io/app": name, "ironic.metal3.io/ironic": ir.Metadata.Name, "ironic.metal3.io/version": "latest",
		}},
		Spec: corev1.PodSpec{
			HostNetwork:                  true,
			DNSPolicy:                    corev1.DNSClusterFirstWithHostNet,
			AutomountServiceAccountToken: ptr(false),
			InitContainers:               inits,
			Containers: []corev1.Container{
				{Name: "ironic", Image: "quay.io/metal3-io/ironic:latest", Command: []string{"/bin/runironic"},
					VolumeMounts: slices.Clone(mounts), SecurityContext: ironicSC()},
				{Name: "httpd", Image: "quay.io/metal3-io/ironic:latest", Command: []string{"/bin/runhttpd"},
					VolumeMounts: slices.Clone(mounts), SecurityContext: ironicSC()},
				{Name: "ramdisk-logs", Image: "quay.io/metal3-io/ironic:latest", Command: []string{"/bin/runlogwatch.sh"},
					VolumeMounts: []corev1.VolumeMount{shared}, SecurityContext: ironicSC()},
			},
			Volumes: vols,
		},
	}
	out := operatorObjects{ironic: &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ir.Metadata.Namespace,
			Labels: map[string]string{"ironic.metal3.io/ironic": ir.Metadata.Name, "ironic.metal3.io/version": "latest"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ironic.metal3.io/app": name}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: mergeOnCreate(applyOperatorOverrides(ir, pod)),
		},
	}}
	if ir.Spec.Database == nil {
		return out
	}
	// newMigrationTemplate, then ensureIronicUpgradeJob's name (from
	// "none": no installed version yet; to the default version "latest").
	for _, phase := range []struct{ phase, script string }{{"pre", "database-upgrade"}, {"post", "online-data-migrations"}} {
		jv := append(slices.Clone(dbVols), emptyDir("ironic-shared"))
		jm := append(slices.Clone(dbMounts), shared)
		jp := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ironic.metal3.io/ironic": ir.Metadata.Name, "ironic.metal3.io/version": "latest"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: phase.script, Image: "quay.io/metal3-io/ironic:latest",
					Command: []string{"/bin/run" + phase.script}, VolumeMounts: jm, SecurityContext: ironicSC()}},
				Volumes:       jv,
				RestartPolicy: corev1.RestartPolicyNever,
			},
		}
		jp.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(true)
		// addDataVolumes.
		jp.Spec.Volumes = append(jp.Spec.Volumes, emptyDir("ironic-data"), emptyDir("ironic-tmp"))
		for i := range jp.Spec.Containers {
			jp.Spec.Containers[i].VolumeMounts = append(jp.Spec.Containers[i].VolumeMounts,
				corev1.VolumeMount{Name: "ironic-data", MountPath: "/data"},
				corev1.VolumeMount{Name: "ironic-data", MountPath: "/conf"},
				corev1.VolumeMount{Name: "ironic-tmp", MountPath: "/tmp"})
		}
		out.jobs = append(out.jobs, batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-none-to-latest", ir.Metadata.Name, phase.phase), Namespace: ir.Metadata.Namespace},
			Spec:       batchv1.JobSpec{Template: mergeOnCreate(applyOperatorOverrides(ir, jp))},
		})
	}
	return out
}

// applyOperatorOverrides is utils.go applyOverridesToPod.
func applyOperatorOverrides(ir operatorIronic, pod corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	o := ir.Spec.Overrides
	if o == nil {
		return pod
	}
	merge := func(m1, m2 map[string]string) map[string]string { // mergeMaps: m1 wins
		if m2 == nil {
			return m1
		}
		r := map[string]string{}
		for k, v := range m2 {
			r[k] = v
		}
		for k, v := range m1 {
			r[k] = v
		}
		return r
	}
	pod.Annotations = merge(pod.Annotations, o.Annotations)
	pod.Labels = merge(pod.Labels, o.Labels)
	pod.Spec.Containers = overrideByName(pod.Spec.Containers, o.Containers, func(c corev1.Container) string { return c.Name })
	pod.Spec.InitContainers = overrideByName(pod.Spec.InitContainers, o.InitContainers, func(c corev1.Container) string { return c.Name })
	pod.Spec.Volumes = overrideByName(pod.Spec.Volumes, o.Volumes, func(v corev1.Volume) string { return v.Name })
	return pod
}

// mergeOnCreate is utils.go mergePodTemplates into the empty template of
// an object CreateOrUpdate creates.
func mergeOnCreate(src corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	var dst corev1.PodTemplateSpec
	dst.Labels = map[string]string{}
	for k, v := range src.Labels {
		dst.Labels[k] = v
	}
	if src.Annotations != nil {
		dst.Annotations = map[string]string{}
		for k, v := range src.Annotations {
			dst.Annotations[k] = v
		}
	}
	merge := func(cs []corev1.Container) []corev1.Container {
		if len(cs) == 0 {
			return cs
		}
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			d := &out[i]
			d.Name, d.Image, d.Command, d.Ports = c.Name, c.Image, c.Command, c.Ports
			d.Env, d.EnvFrom, d.VolumeMounts, d.SecurityContext = c.Env, c.EnvFrom, c.VolumeMounts, c.SecurityContext
			if c.LivenessProbe != nil {
				d.LivenessProbe = operatorProbe(c.LivenessProbe.ProbeHandler)
			}
			if c.ReadinessProbe != nil {
				d.ReadinessProbe = operatorProbe(c.ReadinessProbe.ProbeHandler)
			}
		}
		return out
	}
	dst.Spec.InitContainers = merge(src.Spec.InitContainers)
	dst.Spec.Containers = merge(src.Spec.Containers)
	dst.Spec.Volumes = src.Spec.Volumes
	dst.Spec.HostNetwork = src.Spec.HostNetwork
	dst.Spec.DNSPolicy = src.Spec.DNSPolicy
	dst.Spec.NodeSelector = src.Spec.NodeSelector
	dst.Spec.RestartPolicy = src.Spec.RestartPolicy
	return dst
}

// operatorProbe is utils.go updateProbe(nil, handler).
func operatorProbe(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, InitialDelaySeconds: 1, TimeoutSeconds: 5, FailureThreshold: 12}
}

// overrideByName is applyContainerOverrides / applyVolumeOverrides.
func overrideByName[T any](existing, overrides []T, name func(T) string) []T {
	if len(overrides) == 0 {
		return existing
	}
	left := map[string]T{}
	for _, o := range overrides {
		left[name(o)] = o
	}
	var out []T
	for _, e := range existing {
		if o, ok := left[name(e)]; ok {
			out = append(out, o)
			delete(left, name(e))
		} else {
			out = append(out, e)
		}
	}
	for _, o := range overrides {
		if _, ok := left[name(o)]; ok {
			out = append(out, o)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
