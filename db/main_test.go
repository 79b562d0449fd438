package db

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The tests run against a real PostgreSQL, a real MariaDB (or MySQL) and
// SQLite files, each with the schema made by Ironic's own migrations
// (scripts/ironic-schema.sh, python3-ironic; create_schema for SQLite).
// Without a server or python3-ironic the tests that need it skip with one
// line saying what to install (the DSN, redaction and other pure tests
// run); under ICE_TEST_REQUIRE_ALL=1 (make test, CI) they FAIL instead.
//
// Environment:
//
//	ICE_TEST_PG   libpq key=value DSN of a superuser connection to an existing
//	              database (default: host=127.0.0.1 port=5432 user=postgres
//	              dbname=postgres sslmode=disable)
//	ICE_TEST_PG_URL  the same server as a SQLAlchemy URL prefix for Ironic's
//	              migrations, without the database name (default:
//	              postgresql+psycopg2://postgres@127.0.0.1:5432)
//	ICE_TEST_MYSQL  go-sql-driver DSN of a MariaDB/MySQL superuser, without
//	              the database (default: root@tcp(127.0.0.1:3306)/)
//	ICE_TEST_MYSQL_URL  the same server as a SQLAlchemy URL prefix (default:
//	              mysql+pymysql://root@127.0.0.1:3306)

// steinRevision is the alembic revision that added conductor_group to
// conductors and nodes (Ironic 11.1, Rocky): the oldest schema the exporter
// reads. Every release from Stein on has it.
const steinRevision = "664f85c2f622"

var (
	adminDSN      = testenv.EnvOr("ICE_TEST_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable")
	adminURL      = testenv.EnvOr("ICE_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")
	mysqlAdminDSN = testenv.EnvOr("ICE_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/")
	mysqlAdminURL = testenv.EnvOr("ICE_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")

	// mysqlDBName is the MariaDB test database (current schema) and
	// mysqlDSN its URL; sqlitePath is the SQLite test database (current
	// schema, rollback journal) and sqliteDSN its URL.
	mysqlDBName, mysqlDSN string
	sqlitePath, sqliteDSN string
	// sqliteTemplate is a copy of the freshly made SQLite schema, for tests
	// that need a file of their own.
	sqliteTemplate string

	// testDBName has the current Ironic schema; steinDBName stops at
	// steinRevision. Both are made by TestMain.
	testDBName, steinDBName string
	// testDSN and steinDSN are the SQLAlchemy URLs of those databases, as
	// they would appear in ironic.conf.
	testDSN, steinDSN string

	// testTZ is the session TimeZone of the test databases, and the Go
	// process runs in goTZ: neither may shift a timestamp.
	testTZ = "Asia/Kolkata"
	goTZ   = "America/New_York"
)

// Ping checks that the database answers, as a snapshot connects (the
// tests' way to try a DSN).
func (d *DB) Ping(ctx context.Context) error {
	s, err := d.Begin(ctx, 1)
	if err != nil && ctx.Err() == nil && dbconn.Retryable(err) { // a pooled connection the server closed
		s, err = d.Begin(ctx, 1)
	}
	if err != nil {
		return d.Scrub(fmt.Errorf("pinging database: %w", err))
	}
	s.End(false)
	return nil
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// The gates of the three backends: a test that needs one calls needPG,
// needMySQL or needSQLite, and skips (or fails under
// ICE_TEST_REQUIRE_ALL=1) when TestMain could not set it up for a missing
// dependency. The DSN parsing, redaction and other pure tests need none.
var pgGate, mysqlGate, sqliteGate testenv.Gate

func needPG(t testing.TB)     { t.Helper(); pgGate.Check(t) }
func needMySQL(t testing.TB)  { t.Helper(); mysqlGate.Check(t) }
func needSQLite(t testing.TB) { t.Helper(); sqliteGate.Check(t) }

func testMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL: db tests: "+format+"\n", args...)
		return 1
	}
	loc, err := time.LoadLocation(goTZ)
	if err != nil {
		return fail("loading %s: %v", goTZ, err)
	}
	if err := os.Setenv("TZ", goTZ); err != nil {
		return fail("%v", err)
	}
	time.Local = loc

	pgGate.Err = testenv.Missing(testenv.PostgreSQL, testenv.IronicPython)
	mysqlGate.Err = testenv.Missing(testenv.MariaDB, testenv.IronicPython)
	sqliteGate.Err = testenv.Missing(testenv.IronicPython)
	for _, g := range []*testenv.Gate{&pgGate, &mysqlGate, &sqliteGate} {
		if g.Err != nil {
			fmt.Fprintf(os.Stderr, "db tests: %v\n", g.Err)
		}
	}

	suffix := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	var jobs []struct{ url, rev string }
	if pgGate.Err == nil {
		admin, err := sql.Open("postgres", adminDSN)
		if err != nil {
			return fail("opening %s: %v", dbconn.Redact(adminDSN), err)
		}
		defer func() { _ = admin.Close() }()
		testDBName, steinDBName = "ice_db_test_"+suffix, "ice_db_stein_"+suffix
		testDSN = adminURL + "/" + testDBName
		steinDSN = adminURL + "/" + steinDBName
		for _, name := range []string{testDBName, steinDBName} {
			if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
				return fail("creating database %s: %v", name, err)
			}
			defer func(name string) {
				if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
					fmt.Fprintf(os.Stderr, "dropping database %s: %v\n", name, err)
				}
			}(name)
		}
		jobs = append(jobs, struct{ url, rev string }{testDSN, ""}, struct{ url, rev string }{steinDSN, steinRevision})
		tzAdmin = admin
	}
	if mysqlGate.Err == nil {
		myAdmin, err := sql.Open("mysql", mysqlAdminDSN)
		if err != nil {
			return fail("opening %s: %v", mysqlAdminDSN, err)
		}
		defer func() { _ = myAdmin.Close() }()
		mysqlDBName = "ice_db_test_" + suffix
		mysqlDSN = mysqlAdminURL + "/" + mysqlDBName + "?charset=utf8"
		if _, err := myAdmin.Exec("CREATE DATABASE " + mysqlDBName); err != nil {
			return fail("creating MariaDB database %s: %v", mysqlDBName, err)
		}
		defer func() {
			if _, err := myAdmin.Exec("DROP DATABASE IF EXISTS " + mysqlDBName); err != nil {
				fmt.Fprintf(os.Stderr, "dropping database %s: %v\n", mysqlDBName, err)
			}
		}()
		jobs = append(jobs, struct{ url, rev string }{mysqlAdminURL + "/" + mysqlDBName, ""})
	}
	if sqliteGate.Err == nil {
		sqliteDir, err := os.MkdirTemp("", "ice-db-sqlite-")
		if err != nil {
			return fail("%v", err)
		}
		defer func() { _ = os.RemoveAll(sqliteDir) }()
		sqlitePath = filepath.Join(sqliteDir, "ironic.sqlite")
		sqliteDSN = "sqlite:///" + sqlitePath
		sqliteTemplate = filepath.Join(sqliteDir, "template.sqlite")
		jobs = append(jobs, struct{ url, rev string }{"sqlite:///" + sqliteTemplate, ""})
	}

	// Ironic's migrations, every database at once.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ironicSchema(job.url, job.rev)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail("%v", err)
	}
	if sqliteGate.Err == nil {
		if err := copyFile(sqliteTemplate, sqlitePath); err != nil {
			return fail("%v", err)
		}
	}
	if len(jobs) > 0 {
		fmt.Fprintf(os.Stderr, "db tests: Ironic schemas migrated in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if tzAdmin != nil {
		for _, name := range []string{testDBName, steinDBName} {
			if _, err := tzAdmin.Exec(`ALTER DATABASE ` + name + ` SET timezone TO '` + testTZ + `'`); err != nil {
				return fail("setting the time zone of %s: %v", name, err)
			}
		}
	}
	return m.Run()
}

// tzAdmin is TestMain's PostgreSQL superuser connection.
var tzAdmin *sql.DB

// ironicSchema runs scripts/ironic-schema.sh.
func ironicSchema(url, revision string) error {
	script, err := filepath.Abs("../scripts/ironic-schema.sh")
	if err != nil {
		return err
	}
	args := []string{script, url}
	if revision != "" {
		args = append(args, revision)
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = testenv.PythonEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return fmt.Errorf("ironic's migrations cannot run: %s\n"+
			"install python3-ironic (apt-get install python3-ironic python3-psycopg2 python3-pymysql) so that python3 (or $ICE_PYTHON) can import ironic",
			strings.TrimSpace(out.String()))
	default:
		tail := out.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("scripts/ironic-schema.sh %s %s: %w\n%s", dbconn.Redact(url), revision, err, tail)
	}
}

// testDBConn is a plain superuser connection to a test database, for
// fixtures.
func testDBConn(t testing.TB, name string) *sql.DB {
	t.Helper()
	needPG(t)
	conn, err := sql.Open("postgres", adminDSNFor(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// adminDSNFor is adminDSN on database name (a later key wins, in lib/pq as
// in libpq).
func adminDSNFor(name string) string { return adminDSN + " dbname=" + name }

func mustExec(t testing.TB, conn *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := conn.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// resetTables empties the tables the snapshot reads.
func resetTables(t testing.TB, conn *sql.DB) {
	t.Helper()
	mustExec(t, conn, `TRUNCATE conductor_hardware_interfaces, nodes, conductors RESTART IDENTITY CASCADE`)
}

func openTest(t testing.TB, dsn string, opts dbconn.Options) *DB {
	t.Helper()
	d, err := Open(dsn, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dbconn.Redact(dsn), err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// testBackend is one kind of database the tests run against, with its
// current-schema test database.
type testBackend struct {
	kind rules.Backend
	// dsn is the test database's URL as ironic.conf would have it.
	dsn string
	// admin opens a writable superuser connection to the test database,
	// for fixtures.
	admin func(t testing.TB) *sql.DB
	// reset empties the tables the snapshot reads.
	reset func(t testing.TB, conn *sql.DB)
	// sql adapts a fixture statement written for PostgreSQL.
	sql func(string) string
}

// need skips (or fails) t when the backend's test database is not there.
func (b *testBackend) need(t testing.TB) {
	t.Helper()
	switch b.kind {
	case rules.PostgreSQL:
		needPG(t)
	case rules.MySQL:
		needMySQL(t)
	case rules.SQLite:
		needSQLite(t)
	}
}

func (b *testBackend) exec(t testing.TB, conn *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		mustExec(t, conn, b.sql(s))
	}
}

var (
	pgBackend = &testBackend{
		kind:  rules.PostgreSQL,
		dsn:   "", // set in init: testDSN is known after TestMain started
		admin: func(t testing.TB) *sql.DB { return testDBConn(t, testDBName) },
		reset: resetTables,
		sql:   func(s string) string { return s },
	}
	mysqlBackend = &testBackend{
		kind:  rules.MySQL,
		admin: func(t testing.TB) *sql.DB { return myConn(t, mysqlDBName) },
		reset: deleteRows,
		// MySQL reads "default" as a string: quote the column MySQL's way.
		sql: func(s string) string { return strings.ReplaceAll(s, `"default"`, "`default`") },
	}
	sqliteBackend = &testBackend{
		kind:  rules.SQLite,
		admin: func(t testing.TB) *sql.DB { return sqliteConn(t, sqlitePath) },
		reset: deleteRows,
		sql:   func(s string) string { return s },
	}
)

// deleteRows empties the tables the snapshot and the history read, on
// MariaDB and SQLite (PostgreSQL's resetTables truncates them, restarting
// the ids).
func deleteRows(t testing.TB, conn *sql.DB) {
	t.Helper()
	mustExec(t, conn, `DELETE FROM node_history`, `DELETE FROM conductor_hardware_interfaces`, `DELETE FROM nodes`,
		`DELETE FROM conductors`)
}

// backends lists every backend, with the URLs filled in.
func backends() []*testBackend {
	pgBackend.dsn, mysqlBackend.dsn, sqliteBackend.dsn = testDSN, mysqlDSN, sqliteDSN
	return []*testBackend{pgBackend, mysqlBackend, sqliteBackend}
}

// forEachBackend runs f as a subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b *testBackend)) {
	for _, b := range backends() {
		t.Run(b.kind.String(), func(t *testing.T) { b.need(t); f(t, b) })
	}
}

// myConn is a superuser connection to a MariaDB database ("" for none).
func myConn(t testing.TB, name string) *sql.DB {
	t.Helper()
	needMySQL(t)
	conn, err := sql.Open("mysql", mysqlAdminDSN+name+"?parseTime=true&loc=UTC")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// sqliteConn is a writable connection to a SQLite file, waiting for locks
// as Python's sqlite3 (and so Ironic) does.
func sqliteConn(t testing.TB, path string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn.SetMaxOpenConns(1)
	t.Cleanup(func() { conn.Close() })
	sqliteConns[path] = append(sqliteConns[path], conn)
	return conn
}

// sqliteConns are the connections sqliteConn opened, per file.
var sqliteConns = map[string][]*sql.DB{}
