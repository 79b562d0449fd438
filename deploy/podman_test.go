package deploy

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // MariaDB fixtures
	_ "github.com/lib/pq"              // PostgreSQL fixtures
	_ "modernc.org/sqlite"             // SQLite fixtures

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// The image and the pods run for real here: `make image` builds the image
// with podman (the way CI and a user build it), and the tests run it as
// non-root with a read-only root filesystem, with --network host, against
// Ironic's real schema (scripts/ironic-schema.sh: Ironic's own migrations)
// on PostgreSQL, MariaDB and SQLite. Without podman, PostgreSQL, MariaDB or
// python3-ironic they skip, saying so; `make test` (ICE_TEST_REQUIRE_ALL=1)
// fails instead.

// cleanups run after every test of the package (TestMain): the image, the
// databases and the pods outlive single tests.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func runCleanups() {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanups = nil
}

var (
	imageOnce  sync.Once
	imageName  string
	imageErr   error
	imageBuild time.Duration
)

// needPodman skips t (fails it under ICE_TEST_REQUIRE_ALL=1) without
// podman or without root: the pods are played as root, which owns their
// volumes as the kubelet does (make test runs as root).
func needPodman(t *testing.T) {
	t.Helper()
	testenv.Need(t, testenv.Podman)
	if os.Geteuid() != 0 {
		if testenv.RequireAll() {
			t.Fatal("the podman tests run as root (make provision does)")
		}
		t.Skip("the podman tests run as root")
	}
}

// testImage builds the image once per test binary with `make image` and
// returns its name.
func testImage(t *testing.T) string {
	t.Helper()
	needPodman(t)
	imageOnce.Do(func() {
		name := fmt.Sprintf("localhost/ironic-conductor-exporter:test-%d", os.Getpid())
		start := time.Now()
		cmd := exec.Command("make", "image", "IMAGE="+name)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		imageBuild = time.Since(start)
		if err != nil {
			imageErr = fmt.Errorf("make image: %w\n%s", err, out)
			return
		}
		imageName = name
		atExit(func() { _ = exec.Command("podman", "rmi", "-f", name).Run() })
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageName
}

// fixtureNodes is how many nodes every fixture database holds.
const fixtureNodes = 7

// ironicDB is one database with Ironic's schema and the fixture.
type ironicDB struct {
	backend string
	// dsn is the exporter's --db.dsn from the host (and from a container
	// on the host's network); for SQLite the file's path on the host.
	dsn string
	// dir is SQLite's directory on the host.
	dir string
	db  *sql.DB
}

var (
	dbsOnce sync.Once
	dbs     map[string]*ironicDB
	dbsErr  error
)

// ironicDBs creates, once per test binary, a database with Ironic's schema
// and fixtureNodes nodes in PostgreSQL, MariaDB and SQLite.
func ironicDBs(t *testing.T) map[string]*ironicDB {
	t.Helper()
	testenv.Need(t, testenv.PostgreSQL, testenv.MariaDB, testenv.IronicPython)
	dbsOnce.Do(func() { dbs, dbsErr = makeIronicDBs() })
	if dbsErr != nil {
		t.Fatal(dbsErr)
	}
	return dbs
}

func makeIronicDBs() (map[string]*ironicDB, error) {
	out := map[string]*ironicDB{}
	name := fmt.Sprintf("ice_deploy_%d", os.Getpid())

	pg, err := testenv.NewIronicDB("ice_deploy")
	if err != nil {
		return nil, err
	}
	atExit(pg.Drop)
	pgdb, err := pg.Open()
	if err != nil {
		return nil, err
	}
	out["postgresql"] = &ironicDB{backend: "postgresql", db: pgdb,
		dsn: "postgresql://postgres@127.0.0.1:5432/" + pg.Name + "?sslmode=disable"}

	admin, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/")
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		return nil, err
	}
	atExit(func() {
		if a, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/"); err == nil {
			_, _ = a.Exec("DROP DATABASE IF EXISTS " + name)
			_ = a.Close()
		}
	})
	if err := ironicSchema("mysql+pymysql://root@127.0.0.1:3306/" + name); err != nil {
		return nil, err
	}
	mydb, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/"+name)
	if err != nil {
		return nil, err
	}
	out["mariadb"] = &ironicDB{backend: "mariadb", db: mydb, dsn: "mysql+pymysql://root@127.0.0.1:3306/" + name}

	dir, err := os.MkdirTemp("", "ice-deploy-sqlite")
	if err != nil {
		return nil, err
	}
	atExit(func() { _ = os.RemoveAll(dir) })
	// The container's user (65532) reads the file: the directory and the
	// file readable by all, as a hostPath of root's would be.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "ironic.sqlite")
	if err := ironicSchema("sqlite:///" + file); err != nil {
		return nil, err
	}
	litedb, err := sql.Open("sqlite", file)
	if err != nil {
		return nil, err
	}
	out["sqlite"] = &ironicDB{backend: "sqlite", db: litedb, dsn: file, dir: dir}

	for _, d := range out {
		atExit(func() { _ = d.db.Close() })
		if err := loadDeployFixture(d.db); err != nil {
			return nil, fmt.Errorf("%s fixture: %w", d.backend, err)
		}
	}
	return out, nil
}

// ironicSchema runs Ironic's migrations (scripts/ironic-schema.sh) on url.
func ironicSchema(url string) error {
	cmd := exec.Command(filepath.Join(root, "scripts", "ironic-schema.sh"), url)
	cmd.Env = testenv.PythonEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ironic-schema.sh %s: %w\n%s", url, err, out)
	}
	return nil
}

// loadDeployFixture writes two heartbeating conductors and fixtureNodes
// nodes, in SQL every backend takes (timestamps as SQLAlchemy writes them).
func loadDeployFixture(d *sql.DB) error {
	now := time.Now().UTC().Format("2006-01-02 15:04:05.000000")
	stmts := []string{
		`DELETE FROM nodes`, `DELETE FROM conductors`,
		fmt.Sprintf(`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at) VALUES
		   (1, 'c1.example.com', '[]', TRUE, '', '%[1]s', '%[1]s'),
		   (2, 'c2.example.com', '[]', TRUE, '', '%[1]s', '%[1]s')`, now),
	}
	var values []string
	for i := 1; i <= fixtureNodes; i++ {
		values = append(values, fmt.Sprintf("('%08x-0000-4000-8000-%012x', 'node-%02d', 'ipmi', '', 'available', 'power off', '%s')",
			i, i, i, now))
	}
	stmts = append(stmts, `INSERT INTO nodes (uuid, name, driver, conductor_group, provision_state, power_state, created_at) VALUES `+
		strings.Join(values, ",\n"))
	for _, q := range stmts {
		if _, err := d.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// podmanRun starts a detached container and removes it when the test ends.
func podmanRun(t *testing.T, args ...string) string {
	t.Helper()
	name := fmt.Sprintf("ice-deploy-%d-%d", os.Getpid(), time.Now().UnixNano())
	full := append([]string{"run", "-d", "--name", name}, args...)
	out, err := exec.Command("podman", full...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("podman", "logs", "--tail", "40", name).CombinedOutput()
			t.Logf("podman logs %s:\n%s", name, logs)
		}
		_ = exec.Command("podman", "rm", "-f", "-t", "2", name).Run()
	})
	return name
}

// httpGet returns the status and body of url.
func httpGet(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitOK polls url until it answers 200, for up to timeout.
func waitOK(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		code, body, err := httpGet(url)
		if err == nil && code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %v %.200s", code, err, body)
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s not 200 after %s: %s", url, timeout, last)
}

var sampleRe = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

// sample returns the value of the unlabelled series name in an exposition.
func sample(body, name string) (float64, bool) {
	for _, m := range sampleRe.FindAllStringSubmatch(body, -1) {
		if m[1] == name && m[2] == "" {
			v, err := strconv.ParseFloat(m[3], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// checkScrape asserts /metrics at base: ironic_up 1 and the fixture's
// node count.
func checkScrape(t *testing.T, metricsURL string, nodes int) {
	t.Helper()
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b, err := httpGet(metricsURL)
		body = b
		if err == nil && code == http.StatusOK {
			if up, ok := sample(body, "ironic_up"); ok && up == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no ironic_up 1 after 30s (%d, %v):\n%.2000s", metricsURL, code, err, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n, ok := sample(body, "ironic_nodes"); !ok || int(n) != nodes {
		t.Errorf("%s: ironic_nodes %v (found %v), want %d", metricsURL, n, ok, nodes)
	}
}

func port(addr string) string { _, p, _ := strings.Cut(addr, ":"); return p }

// TestImage runs the image as a user would: --version, then the exporter
// against each backend as non-root with a read-only root filesystem
// (probes, /metrics), then the demo, which needs a writable /tmp: once on
// podman's tmpfs (--read-only) and once on the image's own /tmp (mode
// 1777), as `docker run` without --read-only gives it.
func TestImage(t *testing.T) {
	img := testImage(t)
	t.Logf("make image: %s", imageBuild.Round(time.Millisecond))
	size, err := exec.Command("podman", "image", "inspect", "--format", "{{.Size}}", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURES image size: %s bytes", strings.TrimSpace(string(size)))

	out, err := exec.Command("podman", "run", "--rm", "--read-only", "--network", "none", img, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ironic_conductor_exporter, version ") {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	// The image's identity: numeric non-root user, no shell.
	user, err := exec.Command("podman", "image", "inspect", "--format", "{{.Config.User}}", img).Output()
	if err != nil || strings.TrimSpace(string(user)) != "65532:65532" {
		t.Errorf("image user %q (%v), want 65532:65532", user, err)
	}
	if out, err := exec.Command("podman", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", img, "-c", "true").CombinedOutput(); err == nil {
		t.Errorf("the image has a shell: %s", out)
	}

	secure := []string{"--network", "host", "--read-only", "--user", "65532:65532", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges"}
	for backend, d := range ironicDBs(t) {
		t.Run(backend, func(t *testing.T) {
			addrs := testenv.FreeAddrs(t, 2)
			args := append([]string{}, secure...)
			dsn := d.dsn
			if backend == "sqlite" {
				// Mounted read-write, opened read-only by the DSN: Ironic's
				// directory as a sidecar sees it.
				args = append(args, "-v", d.dir+":/data")
				dsn = "sqlite:////data/" + filepath.Base(d.dsn)
			}
			args = append(args, img, "--db.dsn="+dsn, "--web.listen-address="+addrs[0],
				"--web.probe-listen-address="+addrs[1])
			podmanRun(t, args...)
			waitOK(t, "http://"+addrs[1]+"/healthz", 30*time.Second)
			waitOK(t, "http://"+addrs[1]+"/readyz", 30*time.Second)
			checkScrape(t, "http://"+addrs[0]+"/metrics", fixtureNodes)
		})
	}

	for _, mode := range []struct {
		name string
		args []string
	}{
		{"demo-read-only", []string{"--read-only"}},
		{"demo-image-tmp", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			addr := testenv.FreeAddr(t)
			args := append([]string{"--network", "host", "--user", "65532:65532", "--cap-drop", "ALL"}, mode.args...)
			args = append(args, img, "demo", "--web.listen-address="+addr)
			podmanRun(t, args...)
			deadline := time.Now().Add(60 * time.Second)
			for {
				code, body, err := httpGet("http://" + addr + "/metrics")
				if err == nil && code == http.StatusOK {
					if n, ok := sample(body, "ironic_nodes"); ok && n > 0 {
						if up, _ := sample(body, "ironic_up"); up != 1 {
							t.Errorf("demo: ironic_up %v", up)
						}
						return
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("demo: no nodes after 60s: %d %v %.500s", code, err, body)
				}
				time.Sleep(time.Second)
			}
		})
	}
}
