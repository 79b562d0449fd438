package testenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MariaDB/MySQL driver, for the probe
)

// RequireAllEnv names the environment variable that turns every missing
// dependency into a failure: `make test`, `make unit` and .ci/run set it
// to 1, so that CI never skips. Without it a test whose dependency is
// missing skips with one line saying what to install, so that `go test
// ./...` passes on a machine with Go alone.
const RequireAllEnv = "ICE_TEST_REQUIRE_ALL"

// RequireAll reports whether missing dependencies fail (RequireAllEnv=1).
func RequireAll() bool { return os.Getenv(RequireAllEnv) == "1" }

// Dep is something outside Go that a test needs: a service, a tool, a
// Python module.
type Dep struct {
	name  string
	check func() error
}

func dep(name, install string, check func() error) Dep {
	return Dep{name: name, check: sync.OnceValue(func() error {
		if err := check(); err != nil {
			return fmt.Errorf("%s is missing (%w): %s", name, err, install)
		}
		return nil
	})}
}

// Name is the dependency's short name.
func (d Dep) Name() string { return d.name }

// Check returns nil when the dependency is there, or an error saying what
// is missing and what to install. It probes once per test binary.
func (d Dep) Check() error { return d.check() }

func tool(names ...string) func() error {
	return func() error {
		for _, n := range names {
			if _, err := exec.LookPath(n); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%s not in PATH", strings.Join(names, " or "))
	}
}

func ping(driver, dsn string) func() error {
	return func() error {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	}
}

func pythonImports(modules ...string) func() error {
	return func() error {
		py, err := Python()
		if err != nil {
			return err
		}
		src := "import " + strings.Join(modules, ", ")
		if out, err := exec.Command(py, "-c", src).CombinedOutput(); err != nil {
			if l := lastLine(string(out)); l != "" {
				return fmt.Errorf("%s: %s", py, l)
			}
			return fmt.Errorf("%s: %w", py, err)
		}
		return nil
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Python returns the Python interpreter the tests and scripts use:
// $ICE_PYTHON when set; else, of python3 from PATH and the system's
// /usr/bin/python3 (Debian's, where python3-ironic installs; a pyenv or
// virtualenv python3 may shadow it in PATH), the first that can import
// ironic, or the first that exists.
var Python = sync.OnceValues(findPython)

func findPython() (string, error) {
	if p := os.Getenv("ICE_PYTHON"); p != "" {
		return p, nil
	}
	var found []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(name); err == nil {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no python3 in PATH nor /usr/bin/python3, and ICE_PYTHON not set")
	}
	for _, p := range found {
		if exec.Command(p, "-c", "import ironic").Run() == nil {
			return p, nil
		}
	}
	return found[0], nil
}

// The dependencies of the tests. Each names the Debian packages that
// provide it (make provision installs them all).
var (
	// PostgreSQL is the server of ICE_TEST_PG.
	PostgreSQL = dep("PostgreSQL", "apt-get install postgresql, or set ICE_TEST_PG to a superuser DSN",
		ping("postgres", adminDSN))
	// MariaDB is the server of ICE_TEST_MYSQL.
	MariaDB = dep("MariaDB", "apt-get install mariadb-server, or set ICE_TEST_MYSQL to a superuser DSN",
		ping("mysql", mysqlAdminDSN))
	// IronicPython is a Python that imports ironic with the PostgreSQL and
	// MySQL drivers (Ironic's migrations, scripts/ironic-schema.sh).
	IronicPython = dep("python3-ironic", "apt-get install python3-ironic python3-psycopg2 python3-pymysql (or set ICE_PYTHON)",
		pythonImports("ironic", "psycopg2", "pymysql"))
	// MariaDBServer is mariadb-install-db and mariadbd, for the tests that
	// start a server of their own (in PATH or /usr/sbin).
	MariaDBServer = dep("mariadb-server", "apt-get install mariadb-server",
		tool("mariadb-install-db", "/usr/sbin/mariadb-install-db"))
	// Jinja2 is python3-jinja2 (Kolla's and Ansible's templates).
	Jinja2 = dep("python3-jinja2", "apt-get install python3-jinja2 python3-yaml (or set ICE_PYTHON)",
		pythonImports("jinja2", "yaml"))
	// OsloConfig is python3-oslo.config (python3-ironic brings it).
	OsloConfig = dep("python3-oslo.config", "apt-get install python3-oslo.config (or set ICE_PYTHON)",
		pythonImports("oslo_config"))
	// BaremetalCLI is the stock baremetal CLI (python3-ironicclient).
	BaremetalCLI = dep("baremetal", "apt-get install python3-ironicclient", tool("baremetal"))
	// Ansible is Ansible with its collections (community.mysql).
	Ansible = dep("ansible", "apt-get install ansible", tool("ansible"))
	// Promtool is Prometheus' promtool.
	Promtool = dep("promtool", "apt-get install prometheus", tool("promtool"))
	// Prometheus is the Prometheus server.
	Prometheus = dep("prometheus", "apt-get install prometheus", tool("prometheus"))
	// Amtool is Alertmanager's amtool.
	Amtool = dep("amtool", "apt-get install prometheus-alertmanager", tool("amtool"))
	// Alertmanager is the Alertmanager server.
	Alertmanager = dep("alertmanager", "apt-get install prometheus-alertmanager", tool("prometheus-alertmanager", "alertmanager"))
	// Chromium is a headless browser for the status page.
	Chromium = dep("chromium", "apt-get install chromium", tool("chromium"))
	// SystemdAnalyze checks the systemd unit.
	SystemdAnalyze = dep("systemd-analyze", "apt-get install systemd", tool("systemd-analyze"))
	// Podman builds and runs the image and the rendered pods (podman kube
	// play), as root with the vfs driver and runc (scripts/provision.sh writes
	// /etc/containers/containers.conf and storage.conf).
	Podman = dep("podman", "apt-get install podman runc, and the containers.conf and storage.conf scripts/provision.sh writes",
		podmanWorks)
)

// podmanWorks asks podman for its configuration: it fails where podman is
// missing or cannot start its runtime.
func podmanWorks() error {
	if _, err := exec.LookPath("podman"); err != nil {
		return errors.New("podman not in PATH")
	}
	out, err := exec.Command("podman", "info", "--format", "{{.Store.GraphDriverName}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("podman info: %w: %s", err, lastLine(string(out)))
	}
	return nil
}

var mysqlAdminDSN = EnvOr("ICE_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/")

// Missing returns the error of every dependency that is missing, nil when
// all are there.
func Missing(deps ...Dep) error {
	var msgs []string
	for _, d := range deps {
		if err := d.Check(); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// Need skips t, with one line saying what to install, unless every dep is
// there; with RequireAllEnv=1 (make test, CI) it fails t instead.
func Need(t testing.TB, deps ...Dep) {
	t.Helper()
	(&Gate{Missing(deps...)}).Check(t)
}

// Gate is a setup error a TestMain recorded: Check(t) skips or fails t as
// Need does when it is not nil.
type Gate struct{ Err error }

// Check skips t (or fails it under RequireAllEnv=1) when the setup failed
// for a missing dependency.
func (g *Gate) Check(t testing.TB) {
	t.Helper()
	if g.Err == nil {
		return
	}
	if RequireAll() {
		t.Fatalf("needs %v (%s=1: missing is a failure)", g.Err, RequireAllEnv)
	}
	t.Skipf("needs %v", g.Err)
}

// ExitMissing is for a TestMain of a package whose every test needs deps:
// when something is missing it prints one line and returns the exit code
// (0, the package skipped, or 1 under RequireAllEnv=1) and true.
func ExitMissing(pkg string, deps ...Dep) (int, bool) {
	err := Missing(deps...)
	if err == nil {
		return 0, false
	}
	if RequireAll() {
		fmt.Fprintf(os.Stderr, "FAIL: %s: needs %v (%s=1: missing is a failure)\n", pkg, err, RequireAllEnv)
		return 1, true
	}
	fmt.Fprintf(os.Stderr, "SKIP: %s: needs %v\n", pkg, err)
	return 0, true
}

// PythonEnv is the environment plus PYTHON set to Python(), for the
// scripts (scripts/ironic-schema.sh) that run Python.
func PythonEnv() []string {
	env := os.Environ()
	if py, err := Python(); err == nil {
		env = append(env, "PYTHON="+py)
	}
	return env
}
