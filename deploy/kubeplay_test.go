package deploy

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The pods of every manifest run here with `podman kube play` (podman 4.3,
// Debian's): what kustomize builds, what the chart renders per values
// profile. What kube play cannot run (ServiceMonitor, PodMonitor,
// PrometheusRule, PDB, NetworkPolicy) stays checked by strict decoding
// (deploy_test.go, helmchart_test.go); the chart's dbInit Job, whose
// client images are not on this machine, has its script run by
// TestHelmDBInitScript.

// playEnv is what the test gives a pod that a cluster would: Secrets and
// ConfigMaps by name and key, and the host directory behind an emptyDir.
type playEnv struct {
	image      string
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
	emptyDirs  map[string]string // volume name -> host directory
	tmp        string            // where the volumes' files are written
}

// playable turns the Deployments of a manifest stream into what podman 4.3's
// kube play runs on this machine, and lists what it changed. Every change
// is one podman or this machine needs, not one the manifests should make:
//
//  1. only Deployments are kept (Services, ServiceAccounts, monitors, rules
//     and PDBs have no meaning for kube play; Secrets and ConfigMaps become
//     files, 6);
//  2. replicas 1 (replicas on one host network would share ports);
//  3. hostNetwork: true, the databases being on the host's loopback;
//  4. no container ports: podman refuses port mappings with the host
//     network; a probe's named port becomes its number;
//  5. each secretKeyRef / configMapKeyRef becomes its value (podman 4.3
//     stores a Secret document as written and fails to parse it as JSON);
//  6. secret and configMap volumes become hostPath directories holding the
//     same keys, owned root:fsGroup with the volume's mode, as the kubelet
//     writes them; an emptyDir becomes a hostPath directory (the test plays
//     the containers that write into it), root:fsGroup, 2777;
//  7. the exporter's image becomes the image built by make image, and the
//     other containers and init containers (Ironic's, whose images are not
//     here) are removed;
//  8. a native sidecar (an init container with restartPolicy Always, which
//     the kubelet runs beside the containers) becomes a container: podman
//     4.3 runs every init container to its end first.
func playable(docs []byte, env playEnv) ([]byte, []string, error) {
	var out [][]byte
	changes := map[string]bool{}
	note := func(s string) { changes[s] = true }
	for _, doc := range splitDocs(docs) {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "Deployment":
		case "":
			continue
		default:
			note("1: dropped " + meta.Kind)
			continue
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			return nil, nil, err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			one := int32(1)
			d.Spec.Replicas = &one
			note("2: replicas 1")
		}
		pod := &d.Spec.Template.Spec
		if !pod.HostNetwork {
			pod.HostNetwork = true
			note("3: hostNetwork")
		}
		for _, c := range pod.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				c.RestartPolicy = nil
				pod.Containers = append(pod.Containers, c)
				note("8: native sidecar " + c.Name + " to container")
			} else {
				note("7: removed init container " + c.Name)
			}
		}
		pod.InitContainers = nil
		var kept []corev1.Container
		for _, c := range pod.Containers {
			if c.Name != exporterContainer {
				note("7: removed container " + c.Name)
				continue
			}
			c.Image = env.image
			note("7: image")
			named := map[string]int32{}
			for _, p := range c.Ports {
				named[p.Name] = p.ContainerPort
			}
			if len(c.Ports) > 0 {
				c.Ports = nil
				note("4: no ports")
			}
			for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.Type == intstr.String {
					n, ok := named[pr.HTTPGet.Port.StrVal]
					if !ok {
						return nil, nil, fmt.Errorf("probe port %q is no port of %s", pr.HTTPGet.Port.StrVal, c.Name)
					}
					pr.HTTPGet.Port = intstr.FromInt32(n)
					note("4: probe port by number")
				}
			}
			for i, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				var v string
				var ok bool
				switch {
				case e.ValueFrom.SecretKeyRef != nil:
					v, ok = env.secrets[e.ValueFrom.SecretKeyRef.Name][e.ValueFrom.SecretKeyRef.Key]
				case e.ValueFrom.ConfigMapKeyRef != nil:
					v, ok = env.configMaps[e.ValueFrom.ConfigMapKeyRef.Name][e.ValueFrom.ConfigMapKeyRef.Key]
				default:
					continue
				}
				if !ok {
					return nil, nil, fmt.Errorf("env %s: no such Secret or ConfigMap key in the test", e.Name)
				}
				c.Env[i] = corev1.EnvVar{Name: e.Name, Value: v}
				note("5: secretKeyRef/configMapKeyRef to value")
			}
			kept = append(kept, c)
		}
		pod.Containers = kept
		var gid int64 = 0
		if pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil {
			gid = *pod.SecurityContext.FSGroup
		}
		for i, v := range pod.Volumes {
			dir := filepath.Join(env.tmp, d.Name+"-"+v.Name)
			var err error
			switch {
			case v.Secret != nil:
				err = writeKeys(dir, env.secrets[v.Secret.SecretName], v.Secret.Items, v.Secret.DefaultMode, gid)
				note("6: secret volume to hostPath")
			case v.ConfigMap != nil:
				err = writeKeys(dir, env.configMaps[v.ConfigMap.Name], v.ConfigMap.Items, v.ConfigMap.DefaultMode, gid)
				note("6: configMap volume to hostPath")
			case v.EmptyDir != nil:
				if d, ok := env.emptyDirs[v.Name]; ok {
					dir = d
				}
				if err = os.MkdirAll(dir, 0o755); err == nil {
					if err = os.Chown(dir, 0, int(gid)); err == nil {
						err = os.Chmod(dir, 0o777|os.ModeSetgid)
					}
				}
				note("6: emptyDir to hostPath")
			default:
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			dirType := corev1.HostPathDirectory
			pod.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}}
		}
		b, err := yaml.Marshal(&d)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("no Deployment")
	}
	list := make([]string, 0, len(changes))
	for c := range changes {
		list = append(list, c)
	}
	slices.Sort(list)
	return bytes.Join(out, []byte("---\n")), list, nil
}

// writeKeys writes a Secret's or ConfigMap's keys into dir as the kubelet
// does: the items named (all keys without items), mode defaultMode (0644
// when unset), owner root:gid.
func writeKeys(dir string, data map[string]string, items []corev1.KeyToPath, mode *int32, gid int64) error {
	if data == nil {
		return fmt.Errorf("the test gives no such Secret or ConfigMap")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := os.FileMode(0o644)
	if mode != nil {
		m = os.FileMode(*mode)
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("no key %q", it.Key)
		}
		p := filepath.Join(dir, it.Path)
		fm := m
		if it.Mode != nil {
			fm = os.FileMode(*it.Mode)
		}
		if err := os.WriteFile(p, []byte(v), fm); err != nil {
			return err
		}
		if err := os.Chmod(p, fm); err != nil {
			return err
		}
		if err := os.Chown(p, 0, int(gid)); err != nil {
			return err
		}
	}
	return nil
}

func splitDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(string(stripComments([]byte(d)))) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func TestPlayable(t *testing.T) {
	tmp := t.TempDir()
	in := []byte(`apiVersion: v1
kind: Service
metadata: {name: s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  replicas: 2
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      securityContext: {fsGroup: 994}
      containers:
        - name: ironic
          image: quay.io/metal3-io/ironic
        - name: ironic-conductor-exporter
          image: ghcr.io/x/y:v1
          ports: [{name: probes, containerPort: 10068}]
          env:
            - name: IRONIC_EXPORTER_DB_DSN
              valueFrom: {secretKeyRef: {name: db, key: dsn}}
          livenessProbe: {httpGet: {path: /healthz, port: probes}}
          volumeMounts: [{name: s, mountPath: /s}]
      volumes:
        - name: s
          secret: {secretName: db, defaultMode: 0440, items: [{key: dsn, path: dsn}]}
        - name: e
          emptyDir: {}
`)
	out, changes, err := playable(in, playEnv{image: "localhost/i:t", tmp: tmp,
		secrets: map[string]map[string]string{"db": {"dsn": "sqlite:////x"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1: dropped Service", "2: replicas 1", "3: hostNetwork", "4: no ports", "4: probe port by number",
		"5: secretKeyRef/configMapKeyRef to value", "6: emptyDir to hostPath", "6: secret volume to hostPath",
		"7: image", "7: removed container ironic"}
	if !slices.Equal(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(out, &d); err != nil {
		t.Fatal(err)
	}
	p := d.Spec.Template.Spec
	c := p.Containers
	if *d.Spec.Replicas != 1 || !p.HostNetwork || len(c) != 1 || c[0].Image != "localhost/i:t" || len(c[0].Ports) != 0 ||
		c[0].LivenessProbe.HTTPGet.Port.IntVal != 10068 || c[0].Env[0].Value != "sqlite:////x" || c[0].Env[0].ValueFrom != nil ||
		p.Volumes[0].HostPath == nil || p.Volumes[1].HostPath == nil {
		t.Errorf("not transformed:\n%s", out)
	}
	fi, err := os.Stat(filepath.Join(tmp, "x-s", "dsn"))
	if err != nil || fi.Mode().Perm() != 0o440 {
		t.Errorf("secret file: %v %v", fi, err)
	}
	if _, _, err := playable(in, playEnv{image: "i", tmp: tmp}); err == nil {
		t.Error("a missing Secret went unnoticed")
	}
}

// played is a pod started by kube play.
type played struct {
	name string // the Deployment's
	file string
	pod  corev1.PodSpec
}

// playLock keeps the pods of two test processes on one machine (a second
// make unit beside CI's) apart: the manifests name their Deployments and
// host ports, so two kube plays at once collide ("pod already exists").
// The first pod of a process takes an exclusive flock on a file every
// process opens; the last one gone gives it back.
var playLock struct {
	sync.Mutex
	pods int
	file *os.File
}

// lockPlay holds playLock until the test ends.
func lockPlay(t *testing.T) {
	t.Helper()
	playLock.Lock()
	defer playLock.Unlock()
	if playLock.pods == 0 {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "ironic-conductor-exporter-kubeplay.lock"), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			t.Fatalf("locking kube play: %v", err)
		}
		playLock.file = f
	}
	playLock.pods++
	t.Cleanup(func() {
		playLock.Lock()
		defer playLock.Unlock()
		if playLock.pods--; playLock.pods == 0 {
			_ = playLock.file.Close() // releases the flock
			playLock.file = nil
		}
	})
}

// kubePlay plays the manifest and removes its pods when the test ends.
func kubePlay(t *testing.T, name string, docs []byte, env playEnv) *played {
	t.Helper()
	env.image = testImage(t)
	lockPlay(t)
	if env.tmp == "" {
		env.tmp = t.TempDir()
		if err := os.Chmod(env.tmp, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, changes, err := playable(docs, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: changes for podman: %s", name, strings.Join(changes, "; "))
	file := filepath.Join(env.tmp, name+".yaml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(splitDocs(out)[0], &d); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("podman", "kube", "play", file).CombinedOutput()
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("podman", "pod", "logs", "--tail", "30", d.Name+"-pod-0").CombinedOutput()
			t.Logf("pod logs:\n%s", logs)
		}
		if b, err := exec.Command("podman", "kube", "down", file).CombinedOutput(); err != nil {
			t.Logf("podman kube down: %v\n%s", err, b)
		}
	})
	if err != nil {
		t.Fatalf("podman kube play: %v\n%s\n%s", err, b, out)
	}
	return &played{name: d.Name, file: file, pod: d.Spec.Template.Spec}
}

// flagValue is the value of --name=value in args, "" when absent.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// checkPlayed waits for the exporter container's probes to pass on their
// ports and for /metrics to answer ironic_up 1 with the fixture's nodes.
func checkPlayed(t *testing.T, p *played, nodes int) {
	t.Helper()
	c := container(t, &p.pod, exporterContainer)
	probes := 0
	for _, pr := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			continue
		}
		probes++
		waitOK(t, fmt.Sprintf("http://127.0.0.1:%d%s", pr.HTTPGet.Port.IntValue(), pr.HTTPGet.Path), 60*time.Second)
	}
	if probes == 0 {
		t.Error("no HTTP probe")
	}
	listen := flagValue(c.Args, "web.listen-address")
	if listen == "" {
		t.Fatal("no --web.listen-address")
	}
	metrics := "http://127.0.0.1:" + port(listen) + "/metrics"
	checkScrape(t, metrics, nodes)
	// Two doors: the JSON API on --api.listen-address, /metrics alone on
	// --web.listen-address.
	if api := flagValue(c.Args, "api.listen-address"); api != "" {
		base := "http://127.0.0.1:" + port(api)
		for _, want := range []struct {
			url  string
			code int
		}{{base + "/v1", 200}, {base + "/metrics", 404}, {"http://127.0.0.1:" + port(listen) + "/v1", 404}} {
			if code, body, err := httpGet(want.url); err != nil || code != want.code {
				t.Errorf("%s: %d %v %.200s, want %d", want.url, code, err, body, want.code)
			}
		}
	}
	// The pod's security context held: the exporter runs as the user the
	// manifest names, on a read-only root filesystem.
	// kube play names the container <deployment>-pod-0-<container>.
	id := p.name + "-pod-0-" + exporterContainer
	u, err := exec.Command("podman", "inspect", "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}", id).CombinedOutput()
	if err != nil {
		t.Fatalf("podman inspect %s: %v\n%s", id, err, u)
	}
	user := ""
	if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil {
		user = strconv.FormatInt(*sc.RunAsUser, 10)
	}
	if f := strings.Fields(string(u)); len(f) != 2 || user == "" || !strings.HasPrefix(f[0], user) || f[1] != "true" {
		t.Errorf("container %s: user/read-only %q, want %s and true", id, u, user)
	}
}

// kustomizeBuild is kustomize's output for dir, as YAML.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	y, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// TestKubePlayKustomize runs the kustomize base and the standalone overlay
// against PostgreSQL and MariaDB, and the Metal3 MariaDB sidecar and the
// exporter beside ironic-standalone-operator's Ironic against MariaDB. Pods
// run one after another: on the host network they share ports.
func TestKubePlayKustomize(t *testing.T) {
	needPodman(t)
	dbs := ironicDBs(t)
	dsnSecret := func(backend string) map[string]map[string]string {
		return map[string]map[string]string{"ironic-conductor-exporter-db": {"dsn": dbs[backend].dsn}}
	}
	for _, c := range []struct{ dir, backend string }{
		{"base", "postgresql"},
		{"base", "mariadb"},
		{"overlays/standalone", "postgresql"},
		{"overlays/metal3-mariadb", "mariadb"},
		{"overlays/ironic-standalone-operator", "mariadb"},
		{"overlays/standalone-nova", "mariadb"},
	} {
		t.Run(strings.ReplaceAll(c.dir, "/", "-")+"-"+c.backend, func(t *testing.T) {
			docs := kustomizeBuild(t, filepath.Join(kubeDir(), c.dir))
			secrets := dsnSecret(c.backend)
			// the Nova side's files in place (databases without Nova's
			// tables: it reports them down, Ironic's side is served)
			secrets["ironic-conductor-exporter-nova"] = map[string]string{"api-dsn": dbs[c.backend].dsn, "cell-dsn-template": dbs[c.backend].dsn}
			p := kubePlay(t, "k", docs, playEnv{secrets: secrets})
			checkPlayed(t, p, fixtureNodes)
		})
	}
}

// sqliteAsIronic is Ironic's database as ironic-image leaves it in Metal3's
// pod: Ironic's schema (its own create_schema), journal_mode=wal, owned by
// Ironic's 997:994 with mode 0644, and no -wal/-shm file (no connection
// open).
func sqliteAsIronic(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "ironic.sqlite")
	if err := ironicSchema("sqlite:///" + file); err != nil {
		t.Fatal(err)
	}
	d, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := d.QueryRow("PRAGMA journal_mode=wal").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode=wal: %q %v", mode, err)
	}
	if err := loadDeployFixture(d); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file + "-wal", file + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s left", f)
		}
	}
	if err := os.Chown(file, ironicUID, ironicGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// ironic-image's ironic user and group.
const ironicUID, ironicGID = 997, 994

// ironicWrites adds a node as Ironic would, as Ironic's user, with Debian's
// Python sqlite3 (another SQLite than the exporter's).
func ironicWrites(t *testing.T, file string, id int) error {
	t.Helper()
	py := fmt.Sprintf(`import sqlite3
c = sqlite3.connect(%q)
c.execute("INSERT INTO nodes (uuid, name, driver, conductor_group, provision_state, power_state, created_at) VALUES ('%08x-0000-4000-8000-%012x', 'node-%02d', 'ipmi', '', 'available', 'power off', '2026-01-01 00:00:00.000000')")
c.commit()
c.close()
`, file, id, id, id)
	out, err := exec.Command("setpriv", "--reuid", strconv.Itoa(ironicUID), "--regid", strconv.Itoa(ironicGID),
		"--clear-groups", "/usr/bin/python3", "-c", py).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// metricValue polls url until the unlabelled series name appears and
// cond holds, returning its last value.
func metricValue(t *testing.T, url, name string, timeout time.Duration, cond func(float64) bool) (float64, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var v float64
	var ok bool
	for time.Now().Before(deadline) {
		if code, body, err := httpGet(url); err == nil && code == 200 {
			if v, ok = sample(body, name); ok && cond(v) {
				return v, true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return v, false
}

// TestKubePlayMetal3SQLite runs the Metal3 SQLite overlay's sidecar on
// Ironic's database as ironic-image leaves it (sqliteAsIronic), the test
// playing Ironic: the sidecar reads it, Ironic keeps writing while the
// sidecar runs, and the sidecar sees the writes. With the volume mounted
// readOnly (as the component had it) the sidecar cannot read it.
func TestKubePlayMetal3SQLite(t *testing.T) {
	needPodman(t)
	testenv.Need(t, testenv.IronicPython)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("Debian's /usr/bin/python3 plays Ironic's writes")
	}
	docs := kustomizeBuild(t, filepath.Join(kubeDir(), "overlays", "metal3-sqlite"))
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("readOnly=%v", readOnly), func(t *testing.T) {
			tmp := t.TempDir()
			// Ironic's user reaches its directory (t.TempDir's parent is 0700).
			for _, d := range []string{filepath.Dir(tmp), tmp} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(tmp, "ironic-db")
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 0, ironicGID); err != nil {
				t.Fatal(err)
			}
			file := sqliteAsIronic(t, dir)
			in := docs
			if readOnly {
				in = withReadOnlyDB(t, docs)
			}
			p := kubePlay(t, "m", in, playEnv{tmp: tmp, emptyDirs: map[string]string{"ironic-db": dir}})
			c := container(t, &p.pod, exporterContainer)
			metrics := "http://127.0.0.1:" + port(flagValue(c.Args, "web.listen-address")) + "/metrics"
			if readOnly {
				waitOK(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.LivenessProbe.HTTPGet.Port.IntValue()), 60*time.Second)
				if v, ok := metricValue(t, metrics, "ironic_up", 20*time.Second, func(float64) bool { return true }); !ok || v != 0 {
					t.Errorf("readOnly mount: ironic_up %v (found %v), want 0: the failure this test guards against is gone", v, ok)
				}
				return
			}
			checkPlayed(t, p, fixtureNodes)
			// The sidecar, first to open the database, made the -shm file:
			// Ironic's, so that Ironic still writes.
			if fi, err := os.Stat(file + "-shm"); err != nil {
				t.Errorf("no -shm after the sidecar's read: %v", err)
			} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != ironicUID {
				t.Errorf("-shm owned by %v, want Ironic's %d", fi.Sys(), ironicUID)
			}
			ironicKeepsWriting(t, metrics, file)
		})
	}
}

// ironicKeepsWriting plays Ironic adding nodes while the sidecar reads:
// each write must succeed and show in the sidecar's ironic_nodes.
func ironicKeepsWriting(t *testing.T, metrics, file string) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		if err := ironicWrites(t, file, 100+i); err != nil {
			t.Fatalf("Ironic cannot write its database while the sidecar reads it: %v", err)
		}
		want := float64(fixtureNodes + i)
		if v, ok := metricValue(t, metrics, "ironic_nodes", 30*time.Second, func(v float64) bool { return v == want }); !ok {
			t.Fatalf("after Ironic's write %d: ironic_nodes %v, want %v", i, v, want)
		}
	}
	if up, _ := metricValue(t, metrics, "ironic_up", 5*time.Second, func(float64) bool { return true }); up != 1 {
		t.Errorf("ironic_up %v", up)
	}
}

// withReadOnlyDB mounts the sidecar's database volume readOnly, as the
// component did before.
func withReadOnlyDB(t *testing.T, docs []byte) []byte {
	t.Helper()
	var out [][]byte
	for _, doc := range splitDocs(docs) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil || d.Kind != "Deployment" {
			out = append(out, doc)
			continue
		}
		c := container(t, &d.Spec.Template.Spec, exporterContainer)
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].MountPath == "/data/db" {
				c.VolumeMounts[i].ReadOnly = true
			}
		}
		b, err := yaml.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return bytes.Join(out, []byte("---\n"))
}

// TestKubePlayHelm runs the pod the chart renders for each values profile
// of ci/, with the Secrets and ConfigMaps the profile names holding the
// fixture databases' DSN (or an ironic.conf naming it).
func TestKubePlayHelm(t *testing.T) {
	needPodman(t)
	dbs := ironicDBs(t)
	ch := loadChart(t)
	for i, p := range helmProfiles {
		backend := []string{"postgresql", "mariadb"}[i%2]
		t.Run(p.name()+"-"+backend, func(t *testing.T) {
			out, _, err := renderChart(ch, profileValues(t, p.file))
			if err != nil {
				t.Fatal(err)
			}
			var docs []byte
			for n, s := range out {
				if strings.HasSuffix(n, ".yaml") {
					docs = append(docs, []byte("\n---\n"+s)...)
				}
			}
			dsn := dbs[backend].dsn
			// noauth: the JSON API's Keystone is not what these pods test
			// (conformance/auth runs it against real Keystone).
			conf := "[DEFAULT]\nauth_strategy = noauth\n[database]\nconnection = " + dsn + "\n"
			env := playEnv{
				secrets:    map[string]map[string]string{},
				configMaps: map[string]map[string]string{},
			}
			if p.dsnSecret != "" {
				env.secrets[p.dsnSecret] = map[string]string{p.dsnKey: dsn}
			}
			if p.confConfigMap != "" {
				env.configMaps[p.confConfigMap] = map[string]string{"ironic.conf": conf}
			}
			if p.confSecret != "" {
				env.secrets[p.confSecret] = map[string]string{"ironic.conf": conf}
			}
			if p.novaSecret != "" {
				// nova_api and the cells' template name databases without
				// Nova's tables: the Nova side reports them down, the pod
				// must start with every file in place and serve Ironic.
				env.secrets[p.novaSecret] = map[string]string{"api-dsn": dsn, "cell-dsn-template": dsn}
				env.secrets[p.novaConf] = map[string]string{"nova.conf": "[DEFAULT]\nservice_down_time = 60\nservicegroup_driver = mc\n"}
				for _, cm := range renderProfile(t, p).configMaps { // the chart's computes file
					env.configMaps[cm.Name] = cm.Data
				}
			}
			checkPlayed(t, kubePlay(t, "h", docs, env), fixtureNodes)
		})
	}
}
