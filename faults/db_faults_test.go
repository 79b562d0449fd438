package faults

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// networkFault puts the proxy in mode m between the exporter and b's
// server, while readers load the exporter, then restores it.
func networkFault(t *testing.T, b backend, m mode, hold time.Duration) {
	h := newHarness(t, b)
	p := h.proxied()
	h.start()
	h.fault(b.name + " " + m.String())
	p.set(m)
	if m == slow {
		for range 5 {
			v, took := h.up()
			if v != "1" {
				t.Errorf("slow link: ironic_up %q", v)
			}
			if took > refreshTimeout+margin {
				t.Errorf("slow link: scrape took %s", took)
			}
		}
		p.set(pass)
		h.finish()
		return
	}
	h.down()
	// While the fault lasts, every refresh stays bounded: a scrape that
	// waits for one never waits longer than a refresh.
	h.staysDown(hold, "while the database is unreachable")
	p.set(pass)
	h.recovered(2*refreshTimeout + margin)
	h.waitLog("refresh failed", "refresh recovered")
	if m == blackhole {
		h.waitLog("timed out after")
	}
	if strings.Contains(h.Logs(), "s3cret-pw") {
		t.Error("password in the logs")
	}
	h.finish()
}

func TestPostgreSQLNetwork(t *testing.T) {
	for _, m := range []mode{blackhole, drop, slow} {
		t.Run(m.String(), func(t *testing.T) { networkFault(t, postgres(), m, 2*refreshTimeout) })
	}
}

func TestMariaDBNetwork(t *testing.T) {
	for _, m := range []mode{blackhole, drop, slow} {
		t.Run(m.String(), func(t *testing.T) { networkFault(t, mariadb(), m, 2*refreshTimeout) })
	}
}

// terminate ends the exporter's PostgreSQL sessions (pg_terminate_backend)
// and returns how many there were.
func terminate(t *testing.T, b backend) int {
	t.Helper()
	var n int
	err := b.admin(t).QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND application_name = 'ironic-conductor-exporter'`, pgDB.Name).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgreSQLTerminated: the first refresh after pg_terminate_backend of
// the pooled connection succeeds (retried on a new connection).
func TestPostgreSQLTerminated(t *testing.T) {
	h := newHarness(t, postgres()).start()
	for i := range 3 {
		if n := terminate(t, h.b); n == 0 {
			t.Fatalf("round %d: no exporter session to terminate", i)
		}
		time.Sleep(100 * time.Millisecond)
		if v, took := h.up(); v != "1" {
			t.Errorf("round %d: first scrape after pg_terminate_backend: ironic_up %q (%s)", i, v, took)
		}
	}
	h.noRefreshFailed()
}

// TestPostgreSQLIdleSessionTimeout: with the server closing idle sessions
// faster than scrapes come, ironic_up stays 1.
func TestPostgreSQLIdleSessionTimeout(t *testing.T) {
	h := newHarness(t, postgres())
	if _, err := h.admin.Exec(`ALTER DATABASE ` + pgDB.Name + ` SET idle_session_timeout = '300ms'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.admin.Exec(`ALTER DATABASE ` + pgDB.Name + ` RESET idle_session_timeout`) })
	h.start()
	for i := range 5 {
		time.Sleep(700 * time.Millisecond)
		if v, _ := h.up(); v != "1" {
			t.Errorf("scrape %d after an idle session timeout: ironic_up %q", i, v)
		}
	}
	h.noRefreshFailed()
}

// lockFault holds the lock that stmts take on b's nodes table, with
// release, while readers load the exporter: the refresh fails after the
// query deadline, readers answer at once from the last topology, and the
// release recovers. during runs while the lock is held, after ironic_up 0.
func lockFault(t *testing.T, b backend, fault, release string, stmts []string, during func(h *harness)) {
	h := newHarness(t, b).start()
	h.fault(fault)
	unlock := h.lock(release, stmts...)
	h.down()
	if during != nil {
		during(h)
	}
	unlock()
	h.recovered(refreshTimeout + margin)
	h.finish()
}

// TestPostgreSQLLock: a lock on nodes fails the refresh after the query
// deadline, readers answer at once from the last topology, and the release
// recovers.
func TestPostgreSQLLock(t *testing.T) {
	lockFault(t, postgres(), "postgresql lock on nodes", "ROLLBACK",
		[]string{`BEGIN`, `LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE`}, func(h *harness) {
			// The first step that reads nodes waits for the lock: the
			// probe of the nodes table, or reading them.
			h.waitLog("nodes: timed out after")
		})
}

// TestMariaDBLock: the same with LOCK TABLES on MariaDB.
func TestMariaDBLock(t *testing.T) {
	lockFault(t, mariadb(), "mysql lock on nodes", `UNLOCK TABLES`, []string{`LOCK TABLES nodes WRITE`}, nil)
}

// TestPostgreSQLSchemaChanged: a column renamed under the exporter fails
// refreshes with kind "schema"; the page and /readyz never show the raw
// error; renaming it back recovers.
func TestPostgreSQLSchemaChanged(t *testing.T) {
	h := newHarness(t, postgres()).start()
	h.fault("postgresql column renamed")
	if _, err := h.admin.Exec(`ALTER TABLE nodes RENAME COLUMN resource_class TO resource_class_gone`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.admin.Exec(`ALTER TABLE nodes RENAME COLUMN resource_class_gone TO resource_class`) })
	h.down()
	if v := h.metric(`ironic_exporter_last_refresh_error{kind="schema"}`); v != "1" {
		t.Errorf(`ironic_exporter_last_refresh_error{kind="schema"} = %q`, v)
	}
	_, page, _, _ := h.tryGet("/", map[string]string{"Accept": "text/html"})
	if strings.Contains(page, "resource_class") || strings.Contains(page, "127.0.0.1") {
		t.Errorf("status page shows the database's error")
	}
	h.admin.Exec(`ALTER TABLE nodes RENAME COLUMN resource_class_gone TO resource_class`)
	h.recovered(refreshTimeout + margin)
	h.finish()
}

// TestPostgreSQLBadRows: a NULL conductor_group is kept as the default
// group with a named warning, counted in ironic_exporter_snapshot_warnings.
func TestPostgreSQLBadRows(t *testing.T) {
	h := newHarness(t, postgres())
	for _, q := range []string{`ALTER TABLE nodes ALTER COLUMN conductor_group DROP NOT NULL`,
		`UPDATE nodes SET conductor_group = NULL WHERE name = 'n2'`} {
		if _, err := h.admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		h.admin.Exec(`UPDATE nodes SET conductor_group = '' WHERE conductor_group IS NULL`)
		h.admin.Exec(`ALTER TABLE nodes ALTER COLUMN conductor_group SET NOT NULL`)
	})
	h.start()
	if v := h.metric(`ironic_exporter_snapshot_warnings{reason="null",table="nodes"}`); v != "1" {
		t.Errorf("snapshot warnings for the NULL conductor_group: %q", v)
	}
	h.waitLog("snapshot row warning", "conductor_group NULL", "22222222-2222-4222-8222-222222222222")
	if n := strings.Count(h.Logs(), "snapshot row warning"); n != 1 {
		t.Errorf("warning logged %d times, want once", n)
	}
}

// TestSQLiteLocked: an exclusive lock on the SQLite file fails refreshes
// within the bound; its release recovers; a non-UTF-8 name is kept with a
// warning.
func TestSQLiteLocked(t *testing.T) {
	h := newHarness(t, sqlite())
	if _, err := h.admin.Exec(`UPDATE nodes SET name = CAST(X'6EFF32' AS TEXT) WHERE uuid = '22222222-2222-4222-8222-222222222222'`); err != nil {
		t.Fatal(err)
	}
	h.start()
	if v := h.metric(`ironic_exporter_snapshot_warnings{reason="not_utf8",table="nodes"}`); v != "1" {
		t.Errorf("snapshot warnings for the non-UTF-8 name: %q", v)
	}
	h.fault("sqlite exclusive lock")
	unlock := h.lock(`ROLLBACK`, `BEGIN EXCLUSIVE`)
	h.down()
	unlock()
	h.recovered(refreshTimeout + margin)
	h.finish()
}

// TestPostgreSQLSQLASCII: in a SQL_ASCII database, text that is not UTF-8
// is kept (invalid bytes as U+FFFD) with a warning naming the row; the
// snapshot does not fail. The three tables are made by hand with the
// columns the exporter reads (Ironic's migrations refuse SQL_ASCII).
func TestPostgreSQLSQLASCII(t *testing.T) {
	admin := postgres().admin(t)
	name := pgDB.Name + "_ascii"
	if _, err := admin.Exec(`CREATE DATABASE ` + name + ` ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`) })
	h := emptyHarness(t, backend{name: "postgresql", direct: pgHostPort,
		dsn: func(addr string) string { return "postgresql://postgres@" + addr + "/" + name + "?sslmode=disable" },
		admin: func(t *testing.T) *sql.DB {
			d, err := sql.Open("postgres", "host=127.0.0.1 port=5432 user=postgres sslmode=disable dbname="+name)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		}})
	for _, q := range append(slices.Clone(testenv.MiniSchemaPostgreSQL),
		`INSERT INTO conductors (hostname, conductor_group, online, drivers, created_at, updated_at)
			VALUES (E'c\xff1', '', true, '["ipmi"]', now() at time zone 'utc', now() at time zone 'utc')`,
		`INSERT INTO conductor_hardware_interfaces VALUES (1, 'ipmi')`,
		`INSERT INTO nodes (uuid, name, driver, conductor_group, created_at, owner)
			VALUES ('11111111-1111-4111-8111-111111111111', E'n\xe91', 'ipmi', '', now(), E'p\xe91')`,
	) {
		if _, err := h.admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	h.start()
	for _, s := range []string{`ironic_exporter_snapshot_warnings{reason="not_utf8",table="conductors"}`,
		`ironic_exporter_snapshot_warnings{reason="not_utf8",table="nodes"}`} {
		if v := h.metric(s); v != "1" {
			t.Errorf("%s = %q", s, v)
		}
	}
	h.waitLog("snapshot row warning", "(id 1): hostname is not UTF-8")
}
