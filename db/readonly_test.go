package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Proof that the exporter never writes: on PostgreSQL and MariaDB it works
// as a user that has nothing but SELECT on the three tables, and every
// statement that reaches the server, as the server logs it, is a read.
// (SQLite: TestSQLiteReadOnly opens the file read-only and checks that it
// does not change.)

// readStatement matches the statements a read-only client may send (lib/pq
// pings with an empty statement, ";").
var readStatement = regexp.MustCompile(`(?is)^\s*(;\s*$|SELECT|BEGIN|START TRANSACTION|ROLLBACK|COMMIT|SHOW|SET (SESSION |LOCAL )?TRANSACTION|SET (NAMES|time_zone|autocommit|extra_float_digits|datestyle|client_encoding)\b)`)

// readStatementsOnly fails t for every statement that is not a read and
// checks that the snapshot's three queries are among them.
func readStatementsOnly(t *testing.T, stmts []string) {
	t.Helper()
	if len(stmts) == 0 {
		t.Fatal("the server logged no statement of the exporter")
	}
	for _, s := range stmts {
		if !readStatement.MatchString(s) {
			t.Errorf("not a read: %q", s)
		}
	}
	joined := strings.Join(stmts, "\n")
	for _, table := range []string{"FROM conductors", "FROM conductor_hardware_interfaces", "FROM nodes",
		"WHERE id > ", SQLNodeIDs} {
		if !strings.Contains(joined, table) {
			t.Errorf("no statement reads %s; logged:\n%s", table, joined)
		}
	}
}

// exerciseReader runs what the exporter runs: pings and snapshots, and
// checks that the snapshot is the fixture; then a delta read after admin
// deleted the newest node (the delta statement and the id list).
func exerciseReader(t *testing.T, dsn string, kind rules.Backend, admin *sql.DB) {
	t.Helper()
	d := openTest(t, dsn, dbconn.Options{QueryTimeout: 5 * time.Second})
	ctx := context.Background()
	if err := d.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		snapshotIsFixture(t, d, kind)
	}
	if h, err := d.History(ctx, 0, 10); err != nil || !h.Present || h.Warning != "" {
		t.Errorf("node_history with the read-only grants: %+v, %v", h, err)
	}
	before, err := d.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, fmt.Sprintf(`DELETE FROM nodes WHERE id = %d`, before.NodeProbe.MaxID))
	after, err := d.SnapshotChanges(ctx, &Known{Probe: before.NodeProbe, Nodes: before.Nodes, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if after.NodeRead != NodeReadDelta || int64(len(after.Nodes)) != before.NodeProbe.Count-1 {
		t.Errorf("after a deletion: a %s read of %d nodes, want a delta of %d", after.NodeRead, len(after.Nodes), before.NodeProbe.Count-1)
	}
	d.Close()
}

// pgServerLog is the server's log file: $ICE_TEST_PG_LOG, or Debian's
// /var/log/postgresql/postgresql-<cluster_name>.log.
func pgServerLog(t *testing.T) string {
	if p := os.Getenv("ICE_TEST_PG_LOG"); p != "" {
		return p
	}
	var cluster string
	if err := testDBConn(t, testDBName).QueryRow(`SHOW cluster_name`).Scan(&cluster); err != nil {
		t.Fatal(err)
	}
	return filepath.Join("/var/log/postgresql", "postgresql-"+strings.ReplaceAll(cluster, "/", "-")+".log")
}

func TestPostgresStatementsAreReads(t *testing.T) {
	needPG(t)
	loadFixture(t)
	admin := testDBConn(t, testDBName)
	role := fmt.Sprintf("ice_audit_%d", os.Getpid())
	mustExec(t, admin,
		`CREATE ROLE `+role+` LOGIN`,
		`GRANT SELECT ON `+strings.Join(GrantTables, ", ")+` TO `+role,
		// Only this role's sessions are logged; the setting goes with the role.
		`ALTER ROLE `+role+` SET log_statement = 'all'`)
	t.Cleanup(func() {
		mustExec(t, admin, `REVOKE ALL ON `+strings.Join(GrantTables, ", ")+` FROM `+role, `DROP ROLE `+role)
	})
	logPath := pgServerLog(t)
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatalf("the server log (set ICE_TEST_PG_LOG): %v", err)
	}
	defer f.Close()
	start, err := f.Seek(0, 2)
	if err != nil {
		t.Fatal(err)
	}

	exerciseReader(t, "postgresql://"+role+"@127.0.0.1:5432/"+testDBName+"?sslmode=disable", rules.PostgreSQL, admin)

	// Statements of the role, with their continuation lines.
	marker := " " + role + "@" + testDBName + " "
	var stmts []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		data := make([]byte, 1<<20)
		n, _ := f.ReadAt(data, start)
		stmts = stmts[:0]
		cur := -1
		for _, line := range strings.Split(string(data[:n]), "\n") {
			switch {
			case strings.Contains(line, marker):
				cur = -1
				_, rest, ok := strings.Cut(line, " LOG:  ")
				if !ok {
					if strings.Contains(line, "ERROR:") {
						t.Errorf("server error for the exporter: %s", line)
					}
					continue
				}
				for _, p := range []string{"statement: ", "execute <unnamed>: ", "execute "} {
					if s, ok := strings.CutPrefix(rest, p); ok {
						if p == "execute " {
							_, s, _ = strings.Cut(s, ": ")
						}
						stmts = append(stmts, s)
						cur = len(stmts) - 1
						break
					}
				}
			case cur >= 0 && strings.HasPrefix(line, "\t"):
				stmts[cur] += "\n" + line
			default:
				cur = -1
			}
		}
		if strings.Contains(strings.Join(stmts, "\n"), "FROM nodes") || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d statements logged by PostgreSQL for %s: %q", len(stmts), role, stmts)
	readStatementsOnly(t, stmts)
}

func TestMySQLStatementsAreReads(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	admin := myConn(t, "")
	user := fmt.Sprintf("ice_audit_%d", os.Getpid())
	createMySQLReader(t, admin, user, "audit-pw")

	var oldLog int
	var oldOutput string
	if err := admin.QueryRow(`SELECT @@global.general_log, @@global.log_output`).Scan(&oldLog, &oldOutput); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		mustExec(t, admin, fmt.Sprintf(`SET GLOBAL general_log = %d`, oldLog), `SET GLOBAL log_output = '`+oldOutput+`'`)
	}
	mustExec(t, admin, `SET GLOBAL log_output = 'TABLE'`, `SET GLOBAL general_log = 1`)
	t.Cleanup(restore)
	since := time.Now().UTC().Add(-time.Second)

	exerciseReader(t, "mysql+pymysql://"+user+":audit-pw@127.0.0.1/"+mysqlDBName+"?charset=utf8", rules.MySQL, myConn(t, mysqlDBName))
	restore()

	rows, err := admin.Query(`SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log
		WHERE event_time >= ? AND thread_id IN
		      (SELECT thread_id FROM mysql.general_log WHERE event_time >= ? AND user_host LIKE ?)
		ORDER BY event_time`, since, since, user+"[%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var stmts []string
	threads := map[int64]bool{}
	for rows.Next() {
		var (
			thread  int64
			command string
			arg     string
		)
		if err := rows.Scan(&thread, &command, &arg); err != nil {
			t.Fatal(err)
		}
		threads[thread] = true
		switch command {
		case "Query", "Execute", "Prepare":
			stmts = append(stmts, arg)
		case "Connect", "Quit", "Ping", "Init DB", "Statistics", "Reset connection", "Close stmt":
		default:
			t.Errorf("thread %d: command %s %q", thread, command, arg)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d statements on %d connections logged by MariaDB for %s: %q", len(stmts), len(threads), user, stmts)
	readStatementsOnly(t, stmts)
	// The statements dbconn's MySQL sessions send (dbconn/mysql.go).
	for _, want := range []string{"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
		"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"} {
		found := false
		for _, s := range stmts {
			found = found || s == want
		}
		if !found {
			t.Errorf("%q was not sent", want)
		}
	}
}
