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
)

// The tests run against a real PostgreSQL with the schema made by Ironic's
// own migrations (scripts/ironic-schema.sh, python3-ironic). Nothing is
// skipped: without PostgreSQL or python3-ironic the package FAILS and says
// what to install.
//
// Environment:
//
//	ICE_TEST_PG   libpq key=value DSN of a superuser connection to an existing
//	              database (default: host=127.0.0.1 port=5432 user=postgres
//	              dbname=postgres sslmode=disable)
//	ICE_TEST_PG_URL  the same server as a SQLAlchemy URL prefix for Ironic's
//	              migrations, without the database name (default:
//	              postgresql+psycopg2://postgres@127.0.0.1:5432)

// steinRevision is the alembic revision that added conductor_group to
// conductors and nodes (Ironic 11.1, Rocky): the oldest schema the exporter
// reads. Every release from Stein on has it.
const steinRevision = "664f85c2f622"

var (
	adminDSN = envOr("ICE_TEST_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable")
	adminURL = envOr("ICE_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")

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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL: db tests: "+format+"\n", args...)
		return 1
	}
	loc, err := time.LoadLocation(goTZ)
	if err != nil {
		return fail("loading %s: %v", goTZ, err)
	}
	os.Setenv("TZ", goTZ)
	time.Local = loc

	admin, err := sql.Open("postgres", adminDSN)
	if err != nil {
		return fail("opening %s: %v", Redact(adminDSN), err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		return fail("PostgreSQL is needed at %s (set ICE_TEST_PG; apt-get install postgresql): %v", Redact(adminDSN), err)
	}

	suffix := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
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

	// Ironic's migrations, both databases at once.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, job := range []struct{ url, rev string }{{testDSN, ""}, {steinDSN, steinRevision}} {
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
	fmt.Fprintf(os.Stderr, "db tests: Ironic schemas migrated in %s\n", time.Since(start).Round(time.Millisecond))

	for _, name := range []string{testDBName, steinDBName} {
		if _, err := admin.Exec(`ALTER DATABASE ` + name + ` SET timezone TO '` + testTZ + `'`); err != nil {
			return fail("setting the time zone of %s: %v", name, err)
		}
	}
	return m.Run()
}

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
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return fmt.Errorf("Ironic's migrations cannot run: %s\n"+
			"install python3-ironic (apt-get install python3-ironic python3-psycopg2) so that /usr/bin/python3 can import ironic",
			strings.TrimSpace(out.String()))
	default:
		tail := out.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("scripts/ironic-schema.sh %s %s: %v\n%s", Redact(url), revision, err, tail)
	}
}

// testDBConn is a plain superuser connection to a test database, for
// fixtures.
func testDBConn(t testing.TB, name string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("postgres", adminDSNFor(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func adminDSNFor(name string) string {
	pairs, _ := parseConninfo(adminDSN)
	var b strings.Builder
	for _, p := range pairs {
		if p.Key == "dbname" {
			continue
		}
		fmt.Fprintf(&b, "%s=%s ", p.Key, quoteConninfo(p.Value))
	}
	return b.String() + "dbname=" + name
}

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

func openTest(t testing.TB, dsn string, opts Options) *DB {
	t.Helper()
	d, err := Open(dsn, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", Redact(dsn), err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
