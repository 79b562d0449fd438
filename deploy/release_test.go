//go:build release

package deploy

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseArchives checks dist/ as `make release` leaves it (run by
// `make release-test`): one archive per architecture, each listed in
// sha256sums.txt with its right checksum; the amd64 archive is extracted and
// its binary prints the stamped version.
func TestReleaseArchives(t *testing.T) {
	dist := filepath.Join(root, "dist")
	sums, err := os.ReadFile(filepath.Join(dist, "sha256sums.txt"))
	if err != nil {
		t.Fatalf("no release snapshot (make release): %v", err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			listed[f[1]] = f[0]
		}
	}
	var amd64 string
	for _, arch := range []string{"amd64", "arm64", "ppc64le", "s390x"} {
		m, _ := filepath.Glob(filepath.Join(dist, "ironic-conductor-exporter-*.linux-"+arch+".tar.gz"))
		if len(m) != 1 {
			t.Errorf("linux-%s: archives %v, want one", arch, m)
			continue
		}
		b, err := os.ReadFile(m[0])
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if want := listed[filepath.Base(m[0])]; want != hex.EncodeToString(h[:]) {
			t.Errorf("%s: sha256 %x, sha256sums.txt says %q", filepath.Base(m[0]), h, want)
		}
		if arch == "amd64" {
			amd64 = m[0]
		}
	}
	if amd64 == "" {
		t.FailNow()
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(amd64), "ironic-conductor-exporter-"), ".linux-amd64.tar.gz")
	dir := t.TempDir()
	files := extract(t, amd64, dir)
	top := "ironic-conductor-exporter-" + version + ".linux-amd64/"
	for _, want := range []string{"ironic_conductor_exporter", "LICENSE", "README.md", "CHANGELOG.md",
		"docs/operators.md", "alerts/ironic-conductor-exporter.rules.yml", "deploy/systemd/ironic-conductor-exporter.service", "deploy/systemd/bifrost.conf"} {
		if !files[top+want] {
			t.Errorf("archive lacks %s%s", top, want)
		}
	}
	bin := filepath.Join(dir, top, "ironic_conductor_exporter")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	head, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(head, "ironic_conductor_exporter, version "+version+" (branch: ") || strings.Contains(head, "revision: )") {
		t.Errorf("--version: %q, want version %s with a revision", head, version)
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(head, "revision: "+strings.TrimSpace(string(rev))+")") {
		t.Errorf("--version: %q, want the revision %s", head, rev)
	}
	if !strings.Contains(string(out), "build user:       goreleaser") {
		t.Errorf("--version does not show goreleaser's build:\n%s", out)
	}
	t.Logf("%s", out)
}

// extract unpacks a .tar.gz into dir and returns the names of its files.
func extract(t *testing.T, archive, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	names := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		names[h.Name] = true
		p := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
}
