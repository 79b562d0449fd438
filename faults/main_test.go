// Package faults is the fault suite of the exporter binary (issue 11): a
// TCP proxy that black-holes, drops or slows the database's traffic, server
// side faults (pg_terminate_backend, idle_session_timeout, locks, a changed
// schema, a locked SQLite file), hostile HTTP clients and a bounded fuzzer.
// Each case asserts time bounds (with a generous margin), ironic_up, the log
// lines, and the process' goroutines, file descriptors and RSS before and
// after; it logs the figures (time to ironic_up 0, to recovery, worst
// request latency). Run with `make faults`.
package faults

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

var (
	binary string
	pgDB   *testenv.IronicDB
	// myName is the MariaDB database, sqlitePath the SQLite file.
	myName, sqlitePath string

	myAdminDSN = testenv.EnvOr("ICE_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/")
	myAdminURL = testenv.EnvOr("ICE_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")
	myHostPort = testenv.EnvOr("ICE_TEST_MYSQL_ADDR", "127.0.0.1:3306")
	pgHostPort = testenv.EnvOr("ICE_TEST_PG_ADDR", "127.0.0.1:5432")
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if spec := os.Getenv(floodEnv); spec != "" { // a flood's own process
		return runFlood(spec)
	}
	fail := func(f string, a ...any) int { fmt.Fprintf(os.Stderr, "FAIL: "+f+"\n", a...); return 1 }
	// Every fault runs on all three backends.
	if code, missing := testenv.ExitMissing("faults", testenv.PostgreSQL, testenv.MariaDB, testenv.IronicPython); missing {
		return code
	}
	bin, db, _, cleanup, err := testenv.Setup("ice_faults")
	if err != nil {
		return fail("%v", err)
	}
	defer cleanup()
	binary, pgDB = bin, db

	root, err := testenv.ModuleRoot()
	if err != nil {
		return fail("%v", err)
	}
	schema := filepath.Join(root, "scripts", "ironic-schema.sh")
	my, err := sql.Open("mysql", myAdminDSN)
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = my.Close() }()
	myName = fmt.Sprintf("ice_faults_%d", os.Getpid())
	if _, err := my.Exec("CREATE DATABASE " + myName); err != nil {
		return fail("MariaDB is needed at %s (apt-get install mariadb-server python3-pymysql): %v", myAdminDSN, err)
	}
	defer func() {
		if _, err := my.Exec("DROP DATABASE IF EXISTS " + myName); err != nil {
			fmt.Fprintf(os.Stderr, "dropping %s: %v\n", myName, err)
		}
	}()
	cmd := exec.Command(schema, myAdminURL+"/"+myName)
	cmd.Env = testenv.PythonEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail("Ironic's migrations on MariaDB: %v\n%s", err, out)
	}
	dir, err := os.MkdirTemp("", "ice_faults_sqlite_")
	if err != nil {
		return fail("%v", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sqlitePath = filepath.Join(dir, "ironic.sqlite")
	cmd = exec.Command(schema, "sqlite:///"+sqlitePath)
	cmd.Env = testenv.PythonEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail("Ironic's schema on SQLite: %v\n%s", err, out)
	}
	return m.Run()
}

// backend is one database the suite runs against.
type backend struct {
	name string
	// dsn is the exporter's DSN through addr (host:port).
	dsn func(addr string) string
	// direct is where the server listens.
	direct string
	// admin opens a superuser connection for fixtures and faults.
	admin func(t *testing.T) *sql.DB
}

func postgres() backend {
	return backend{name: "postgresql", direct: pgHostPort,
		dsn: func(addr string) string {
			return fmt.Sprintf("postgresql+psycopg2://postgres:s3cret-pw@%s/%s?sslmode=disable", addr, pgDB.Name)
		},
		admin: func(t *testing.T) *sql.DB { return pgDB.DB(t) }}
}

func mariadb() backend {
	return backend{name: "mysql", direct: myHostPort,
		dsn: func(addr string) string {
			return fmt.Sprintf("mysql+pymysql://root@%s/%s?charset=utf8", addr, myName)
		},
		admin: func(t *testing.T) *sql.DB {
			d, err := sql.Open("mysql", strings.TrimSuffix(myAdminDSN, "/")+"/"+myName+"?parseTime=true")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		}}
}

// sqlite is the SQLite file, which the exporter opens itself (there is no
// server to put a proxy in front of).
func sqlite() backend {
	return backend{name: "sqlite",
		dsn: func(string) string { return "sqlite:///" + sqlitePath },
		admin: func(t *testing.T) *sql.DB {
			d, err := sql.Open("sqlite", sqlitePath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		}}
}

// fixture fills the tables with two fresh conductors and three nodes, in SQL
// every backend takes.
func fixture(t *testing.T, d *sql.DB, mysql bool) {
	t.Helper()
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	for _, q := range []string{
		`DELETE FROM nodes`, `DELETE FROM conductor_hardware_interfaces`, `DELETE FROM conductors`,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
		 VALUES (1, 'c1', '["ipmi"]', true, '', '` + now + `', '` + now + `'),
		        (2, 'c2', '["ipmi"]', true, '', '` + now + `', '` + now + `')`,
		`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, ` + "\"default\"" + `, created_at)
		 VALUES (1, 'ipmi', 'power', 'ipmitool', true, '` + now + `'), (2, 'ipmi', 'power', 'ipmitool', true, '` + now + `')`,
		`INSERT INTO nodes (uuid, name, driver, conductor_group, created_at)
		 VALUES ('11111111-1111-4111-8111-111111111111', 'n1', 'ipmi', '', '` + now + `'),
		        ('22222222-2222-4222-8222-222222222222', 'n2', 'ipmi', '', '` + now + `'),
		        ('33333333-3333-4333-8333-333333333333', 'n3', 'ipmi', '', '` + now + `')`,
	} {
		if mysql {
			q = strings.ReplaceAll(q, `"default"`, "`default`")
		}
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
