package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The exporter's port, the same everywhere: 9608, its port before 0.1.0,
// is ironic-prometheus-exporter's (cmd/ironic_conductor_exporter/main.go,
// docs/operators.md "Ports").
const (
	exporterPort = "10067"
	probePort    = "10068"
	oldPort      = "9608"
)

// TestNoOldPort greps every tracked file for 9608: it may only appear where
// it is named as ironic-prometheus-exporter's port.
func TestNoOldPort(t *testing.T) {
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if f == "deploy/port_test.go" {
			continue
		}
		fh, err := os.Open(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.Contains(line, oldPort) && !strings.Contains(line, "ironic-prometheus-exporter") &&
				!strings.Contains(line, "ironic_prometheus_exporter") {
				t.Errorf("%s:%d: port %s (ironic-prometheus-exporter's); the exporter's is %s: %s", f, n, oldPort, exporterPort, strings.TrimSpace(line))
			}
		}
		fh.Close()
	}
}

// TestPortEverywhere: the files that name a port name this one.
func TestPortEverywhere(t *testing.T) {
	for _, f := range []string{"cmd/ironic_conductor_exporter/main.go", "deploy/container/Containerfile",
		"deploy/kubernetes/base/deployment.yaml", "deploy/kubernetes/base/service.yaml",
		"deploy/kubernetes/components/sidecar-sqlite/sidecar-patch.yaml", "deploy/kubernetes/components/sidecar-secret/sidecar-patch.yaml",
		"deploy/systemd/ironic-conductor-exporter.default", "README.md", "docs/operators.md", "demo/demo.go"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), exporterPort) {
			t.Errorf("%s does not name port %s", f, exporterPort)
		}
	}
	for _, f := range []string{"deploy/kubernetes/base/deployment.yaml", "deploy/systemd/ironic-conductor-exporter.default"} {
		b, _ := os.ReadFile(filepath.Join(root, f))
		if !strings.Contains(string(b), "--web.probe-listen-address=") || !strings.Contains(string(b), probePort) {
			t.Errorf("%s: no --web.probe-listen-address on port %s (probes must work with --web.config.file)", f, probePort)
		}
	}
}
