package db

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// sqliteCopy makes a private copy of the freshly made SQLite schema, in
// journal mode mode ("delete" or "wal").
func sqliteCopy(t *testing.T, mode string) string {
	t.Helper()
	needSQLite(t)
	path := filepath.Join(t.TempDir(), "ironic.sqlite")
	if err := copyFile(sqliteTemplate, path); err != nil {
		t.Fatal(err)
	}
	conn := sqliteConn(t, path)
	var got string
	if err := conn.QueryRow(`PRAGMA journal_mode = ` + mode).Scan(&got); err != nil || got != mode {
		t.Fatalf("journal_mode = %s: %q, %v", mode, got, err)
	}
	return path
}

// sqliteWALBackend is the SQLite backend on a WAL-mode copy of the schema.
func sqliteWALBackend(t *testing.T) *testBackend {
	path := sqliteCopy(t, "wal")
	b := *sqliteBackend
	b.dsn = "sqlite:///" + path
	b.admin = func(t testing.TB) *sql.DB { return sqliteConn(t, path) }
	return &b
}

func TestSQLiteReadOnly(t *testing.T) {
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) { testSQLiteReadOnly(t, mode) })
	}
}

func testSQLiteReadOnly(t *testing.T, mode string) {
	path := sqliteCopy(t, mode)
	b := *sqliteBackend
	b.dsn, b.admin = "sqlite:///"+path, func(t testing.TB) *sql.DB { return sqliteConn(t, path) }
	loadFixtureOn(t, &b)
	closeAll(t, path)
	sum := func() [32]byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(data)
	}
	before := sum()
	st, _ := os.Stat(path)
	d := openTest(t, b.dsn, dbconn.Options{})
	var checked bool
	setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
		if stage != "begin" {
			return nil
		}
		checked = true
		_, err := tx.ExecContext(ctx, `UPDATE nodes SET maintenance = 0`)
		if err == nil || !strings.Contains(err.Error(), "readonly") && !strings.Contains(err.Error(), "read-only") {
			t.Errorf("write in the snapshot transaction: err = %v, want SQLITE_READONLY", err)
		}
		return nil
	})
	for range 3 {
		snapshotIsFixture(t, d, rules.SQLite)
	}
	if !checked {
		t.Fatal("hook did not run")
	}
	d.Close()
	if sum() != before {
		t.Error("the database file changed")
	}
	if st2, _ := os.Stat(path); !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("mtime changed: %v -> %v", st.ModTime(), st2.ModTime())
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if st, err := os.Stat(path + suffix); err == nil {
			t.Logf("%s: %d bytes", path+suffix, st.Size())
			if suffix != "-shm" && st.Size() > 0 {
				t.Errorf("%s left behind with %d bytes", path+suffix, st.Size())
			}
		}
	}
}

// closeAll closes the fixture connections of path (registered by
// sqliteConn), so that a WAL database has no -wal or -shm file left.
func closeAll(t *testing.T, path string) {
	t.Helper()
	for _, c := range sqliteConns[path] {
		c.Close()
	}
	delete(sqliteConns, path)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Fatalf("%s still exists after closing every connection", path+suffix)
		}
	}
}

func TestSQLiteMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.sqlite")
	d := openTest(t, "sqlite:///"+path, dbconn.Options{})
	_, err := d.Snapshot(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "connecting to database: ") {
		t.Errorf("snapshot of a missing file: %v", err)
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Error("the exporter created the database file")
	}
	t.Logf("snapshot: %v", err)
}

// TestSQLiteRelativePath: sqlite:///relative is relative to the working
// directory at Open.
func TestSQLiteRelativePath(t *testing.T) {
	needSQLite(t)
	loadFixtureOn(t, sqliteBackend)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, sqlitePath)
	if err != nil {
		t.Fatal(err)
	}
	d := openTest(t, "sqlite:///"+rel+"?timeout=30", dbconn.Options{})
	snapshotIsFixture(t, d, rules.SQLite)
}

// TestSQLiteTimestamps: SQLAlchemy's text form is read exactly; anything
// else reads as NULL with a warning, without failing the snapshot.
func TestSQLiteTimestamps(t *testing.T) {
	needSQLite(t)
	conn := sqliteBackend.admin(t)
	sqliteBackend.reset(t, conn)
	mustExec(t, conn,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at) VALUES
		 (1, 'sqla', '[]', 1, '', '2024-02-29 23:59:59.999999', '2024-03-01 00:00:00.000000'),
		 (2, 'current_timestamp', '[]', 1, '', '2024-03-01 12:00:00', '2024-03-01 12:00:00.123'),
		 (3, 'iso', '[]', 1, '', '2024-03-01T12:00:00', '2024-03-01 12:00:00+02:00'),
		 (4, 'number', '[]', 1, '', 1709294400, '2024-02-30 00:00:00')`,
		`INSERT INTO nodes (id, uuid, driver, created_at, updated_at) VALUES
		 (1, 'u1', 'ipmi', '2024-01-01 00:00:00.000001', 'garbage'),
		 (2, 'u2', 'ipmi', 'x', 'y')`)
	d := openTest(t, sqliteDSN, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var times []string
	for _, c := range got.Conductors {
		times = append(times, c.CreatedAt.Format(time.RFC3339Nano)+" "+c.UpdatedAt.Format(time.RFC3339Nano))
	}
	for _, n := range got.Nodes {
		times = append(times, n.CreatedAt.Time().Format(time.RFC3339Nano)+" "+n.UpdatedAt.Time().Format(time.RFC3339Nano))
	}
	want := []string{
		"2024-02-29T23:59:59.999999Z 2024-03-01T00:00:00Z",
		"2024-03-01T12:00:00Z 2024-03-01T12:00:00.000123Z", // SQLAlchemy: ".123" is 123µs
		"0001-01-01T00:00:00Z 0001-01-01T00:00:00Z",
		"0001-01-01T00:00:00Z 0001-01-01T00:00:00Z",
		"2024-01-01T00:00:00.000001Z 0001-01-01T00:00:00Z",
		"0001-01-01T00:00:00Z 0001-01-01T00:00:00Z",
	}
	if diff := cmp.Diff(want, times); diff != "" {
		t.Errorf("timestamps (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		`conductor "iso" (id 3): created_at "2024-03-01T12:00:00" is not a timestamp, read as NULL`,
		`conductor "iso" (id 3): updated_at "2024-03-01 12:00:00+02:00" is not a timestamp, read as NULL`,
		`conductor "number" (id 4): created_at "1709294400" is not a timestamp, read as NULL`,
		`conductor "number" (id 4): updated_at "2024-02-30 00:00:00" is not a timestamp, read as NULL`,
		`2 node(s) with a created_at or updated_at that is not a timestamp, read as NULL; first: node u1 (id 1): created_at 2024-01-01 00:00:00.000001, updated_at "garbage"`,
	}
	if diff := cmp.Diff(wantWarnings, got.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestSQLiteLocked: while a writer holds an EXCLUSIVE lock (rollback
// journal) the snapshot waits up to its deadline, then fails saying so; the
// pool works again afterwards.
func TestSQLiteLocked(t *testing.T) {
	path := sqliteCopy(t, "delete")
	b := *sqliteBackend
	b.dsn, b.admin = "sqlite:///"+path, func(t testing.TB) *sql.DB { return sqliteConn(t, path) }
	loadFixtureOn(t, &b)
	const timeout = 300 * time.Millisecond
	d := openTest(t, b.dsn, dbconn.Options{QueryTimeout: timeout})
	writer := sqliteConn(t, path)
	ctx := context.Background()
	wc, err := writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	if _, err := wc.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = d.Snapshot(ctx)
	elapsed := time.Since(start)
	if _, err := wc.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	t.Logf("error after %s: %v", elapsed.Round(time.Millisecond), err)
	if err == nil || !strings.HasPrefix(err.Error(), "reading conductors: ") {
		t.Errorf("snapshot through an exclusive lock: %v", err)
	}
	if elapsed < timeout-50*time.Millisecond || elapsed > timeout+2*time.Second {
		t.Errorf("snapshot took %s with a %s query timeout", elapsed, timeout)
	}
	if _, err := d.Snapshot(ctx); err != nil {
		t.Errorf("snapshot after the lock was released: %v", err)
	}
}

// heartbeatWriter is what Ironic's conductors do to a SQLite database, in a
// separate process through Python's sqlite3 (as SQLAlchemy's pysqlite does,
// with its default 5s busy timeout): heartbeats, node updates and lock
// churn, each its own transaction, with 1ms between them (far busier than
// a real conductor; with no pause at all the writer starves readers in
// rollback-journal mode, which delays snapshots by seconds but still fails
// neither side), until it has made minCommits commits and the stop file
// exists (or a safety deadline of 300s passes): counts, not seconds, so that
// a loaded machine makes the test slower, never failed.
// It prints "commits=N errors=M maxwait=S" and every error.
const heartbeatWriter = `
import os, sqlite3, sys, time
path, stop, min_commits = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(path, timeout=5.0)
commits = errors = 0
maxwait = 0.0
end = time.time() + 300
i = 0
while time.time() < end and (commits < min_commits or not os.path.exists(stop)):
    i += 1
    now = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime()) + '.%06d' % (i % 1000000)
    t0 = time.time()
    try:
        db.execute("UPDATE conductors SET updated_at = ?, online = 1 WHERE id = ?", (now, 1 + i % 5))
        db.execute("UPDATE nodes SET reservation = ?, updated_at = ? WHERE id = ?",
                   ('cond-%d' % (i % 5) if i % 2 else None, now, 1 + i % 2000))
        db.commit()
        commits += 1
    except sqlite3.Error as e:
        errors += 1
        print('error:', e, flush=True)
        db.rollback()
    maxwait = max(maxwait, time.time() - t0)
    time.sleep(0.001)
print('commits=%d errors=%d maxwait=%.3f' % (commits, errors, maxwait), flush=True)
`

// TestSQLiteConcurrentWriter runs the exporter's snapshots in a loop while a
// separate process writes like Ironic, on a rollback-journal and on a WAL
// database: the writer must never fail ("database is locked") because of
// the exporter, and every snapshot must succeed and see a consistent state.
func TestSQLiteConcurrentWriter(t *testing.T) {
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			path := sqliteCopy(t, mode)
			conn := sqliteConn(t, path)
			mustExec(t, conn, `INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
				VALUES (1, 'cond-0', '[]', 1, '', '2024-01-01 00:00:00.000000', '2024-01-01 00:00:00.000000'),
				       (2, 'cond-1', '[]', 1, '', '2024-01-01 00:00:00.000000', '2024-01-01 00:00:00.000000'),
				       (3, 'cond-2', '[]', 1, '', '2024-01-01 00:00:00.000000', '2024-01-01 00:00:00.000000'),
				       (4, 'cond-3', '[]', 1, '', '2024-01-01 00:00:00.000000', '2024-01-01 00:00:00.000000'),
				       (5, 'cond-4', '[]', 1, '', '2024-01-01 00:00:00.000000', '2024-01-01 00:00:00.000000')`,
				`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
				 INSERT INTO nodes (id, uuid, driver, conductor_group, created_at, updated_at)
				 SELECT i, printf('%08d-0000-4000-8000-000000000000', i), 'ipmi', '', '2024-01-01 00:00:00.000000',
				        '2024-01-01 00:00:00.000000' FROM n`)
			conn.Close()

			// Both sides must make progress together: the writer runs until
			// it made minCommits commits and the reader took minSnapshots.
			const minCommits, minSnapshots = 200, 20
			stop := filepath.Join(t.TempDir(), "stop")
			py, err := testenv.Python()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, "-c", heartbeatWriter, path, stop, fmt.Sprint(minCommits))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			d := openTest(t, "sqlite:///"+path, dbconn.Options{QueryTimeout: 5 * time.Second})
			var snaps, failed int
			var maxDur time.Duration
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
		loop:
			for {
				select {
				case werr = <-done:
					break loop
				default:
				}
				start := time.Now()
				s, err := d.Snapshot(context.Background())
				maxDur = max(maxDur, time.Since(start))
				if snaps++; snaps == minSnapshots {
					if err := os.WriteFile(stop, nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err != nil {
					failed++
					t.Errorf("snapshot %d: %v", snaps, err)
					continue
				}
				if len(s.Nodes) != 2000 || len(s.Conductors) != 5 || len(s.Warnings) != 0 {
					t.Errorf("snapshot %d: %d nodes, %d conductors, warnings %v", snaps, len(s.Nodes), len(s.Conductors), s.Warnings)
				}
			}
			report := strings.TrimSpace(out.String())
			t.Logf("%s: %d snapshots (%d failed, slowest %s) while the writer ran; writer: %s",
				mode, snaps, failed, maxDur.Round(time.Millisecond), report)
			if werr != nil {
				t.Fatalf("writer: %v\n%s", werr, report)
			}
			var commits, errs int
			var maxwait float64
			last := report[strings.LastIndex(report, "\n")+1:]
			if _, err := fmt.Sscanf(last, "commits=%d errors=%d maxwait=%f", &commits, &errs, &maxwait); err != nil {
				t.Fatalf("writer output %q: %v", report, err)
			}
			if errs != 0 || commits < minCommits {
				t.Errorf("writer: %d commits, %d errors", commits, errs)
			}
			if snaps < minSnapshots {
				t.Errorf("only %d snapshots: the writer stopped at its safety deadline", snaps)
			}
		})
	}
}

// TestSQLiteOddValues: SQLite keeps any value in any column; an odd value
// in a boolean or integer column is a warning about its row, never a
// failed snapshot (it failed the whole refresh, and the exporter never
// became ready): online 'maybe' reads as false (out of the rings, as
// Ironic's "online IS 1"), maintenance 'yes' as false, conductor_affinity
// 'abc' or 1e20 as NULL; the other rows read as they are.
func TestSQLiteOddValues(t *testing.T) {
	needSQLite(t)
	conn := sqliteBackend.admin(t)
	sqliteBackend.reset(t, conn)
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	mustExec(t, conn,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at) VALUES
		 (1, 'good', '[]', 1, '', '`+now+`', '`+now+`'),
		 (2, 'odd', '[]', 'maybe', '', '`+now+`', '`+now+`'),
		 (3, 'half', '[]', 0.5, '', '`+now+`', '`+now+`')`,
		`INSERT INTO nodes (id, uuid, driver, maintenance, conductor_affinity, created_at) VALUES
		 (1, 'u1', 'ipmi', 'yes', 1, '`+now+`'),
		 (2, 'u2', 'ipmi', 0, 'abc', '`+now+`'),
		 (3, 'u3', 'ipmi', 0, 1e20, '`+now+`'),
		 (4, 'u4', 'ipmi', 1, 1, '`+now+`')`)
	d := openTest(t, sqliteDSN, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("odd values failed the snapshot: %v", err)
	}
	var rows []string
	for _, c := range got.Conductors {
		rows = append(rows, fmt.Sprintf("%s online=%v", c.Hostname, c.Online))
	}
	for _, n := range got.Nodes {
		rows = append(rows, fmt.Sprintf("%s maintenance=%v affinity=%v/%d", n.UUID, n.Maintenance, n.HasConductorAffinity, n.ConductorAffinity))
	}
	want := []string{"good online=true", "odd online=false", "half online=false",
		"u1 maintenance=false affinity=true/1", "u2 maintenance=false affinity=false/0",
		"u3 maintenance=false affinity=false/0", "u4 maintenance=true affinity=true/1"}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		`conductor "odd" (id 2): online "maybe" is not a boolean, read as false`,
		`conductor "half" (id 3): online 0.5 is not a boolean, read as false`,
		`3 node(s) with a maintenance that is no boolean (read as false) or a conductor_affinity that is no integer (read as NULL); first: node u1 (id 1), column maintenance "yes"`,
	}
	if diff := cmp.Diff(wantWarnings, got.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]WarningCount{{Table: tableConductors, Reason: ReasonBadValue, Rows: 2},
		{Table: tableNodes, Reason: ReasonBadValue, Rows: 3}}, got.WarningCounts); diff != "" {
		t.Errorf("warning counts (-want +got):\n%s", diff)
	}
}
