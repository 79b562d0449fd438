package db

import (
	"context"
	"fmt"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// historyRow is a node_history row as Ironic's node_history_record writes
// it (conductor/utils.py, fbaad948d): the event text is there, and must
// never be read.
func historyRow(id int, node int, conductor, severity, eventType, created string) string {
	return fmt.Sprintf(`INSERT INTO node_history (id, uuid, conductor, event_type, severity, event, "user", node_id, created_at)
VALUES (%d, 'ev-%d', '%s', '%s', '%s', 'secret text %d', 'u', %d, '%s')`, id, id, conductor, eventType, severity, id, node, created)
}

func TestHistory(t *testing.T) { forEachBackend(t, testHistory) }

func testHistory(t *testing.T, b *testBackend) {
	loadFixtureOn(t, b)
	conn := b.admin(t)
	q := func(s string) string {
		if b.kind == rules.MySQL {
			return strings.ReplaceAll(s, `"user"`, "`user`")
		}
		return s
	}
	for i := 1; i <= 5; i++ {
		sev := "INFO"
		if i%2 == 1 {
			sev = "ERROR"
		}
		mustExec(t, conn, q(historyRow(i, 1, "cond-a.example.com", sev, "provisioning", fmt.Sprintf("2024-03-10 02:3%d:00", i))))
	}
	t.Cleanup(func() { mustExec(t, conn, `DELETE FROM node_history`) })
	d := openTest(t, b.dsn, dbconn.Options{})
	ctx := context.Background()

	// A first read starts backlog rows before the newest one.
	r, err := d.History(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Present || len(r.Events) != 2 || r.Events[0].ID != 4 || r.Events[1].ID != 5 || r.Warning != "" {
		t.Fatalf("first read: %+v", r)
	}
	e := r.Events[1]
	want := HistoryEvent{ID: 5, NodeID: 1, Conductor: "cond-a.example.com", Severity: "ERROR", EventType: "provisioning",
		CreatedAt: time.Date(2024, 3, 10, 2, 35, 0, 0, time.UTC)}
	if e != want {
		t.Errorf("event %+v, want %+v", e, want)
	}
	// The next reads continue after the cursor, in id order.
	mustExec(t, conn, q(historyRow(6, 2, "cond-z", "ERROR", "cleaning", "2024-03-10 02:40:00")))
	r, err = d.History(ctx, 5, 2)
	if err != nil || len(r.Events) != 1 || r.Events[0].ID != 6 || r.Events[0].Conductor != "cond-z" {
		t.Fatalf("after 5: %+v, %v", r, err)
	}
	if r, err = d.History(ctx, 6, 2); err != nil || !r.Present || len(r.Events) != 0 {
		t.Fatalf("after 6: %+v, %v", r, err)
	}
	// An empty table: a first read finds nothing, without error.
	mustExec(t, conn, `DELETE FROM node_history`)
	if r, err = d.History(ctx, 0, 10); err != nil || !r.Present || len(r.Events) != 0 {
		t.Fatalf("empty: %+v, %v", r, err)
	}
}

func TestHistoryBatchIsTheLimit(t *testing.T) {
	if q := SQLHistoryAfter("$1"); !strings.HasSuffix(q, fmt.Sprintf("LIMIT %d", HistoryBatch)) || !strings.Contains(q, "id > $1") {
		t.Errorf("SQLHistoryAfter does not read after $1 with LIMIT %d:\n%s", HistoryBatch, q)
	}
}

// A schema older than 18.2 has no node_history: no events, no error.
func TestHistoryAbsentBeforeIronic18(t *testing.T) {
	needPG(t)
	d := openTest(t, steinDSN, dbconn.Options{})
	r, err := d.History(context.Background(), 0, 10)
	if err != nil || r.Present || len(r.Events) != 0 {
		t.Fatalf("stein: %+v, %v", r, err)
	}
}

// A read-only role without SELECT on node_history gets a warning, not a
// failed read.
func TestHistoryNotGranted(t *testing.T) {
	needPG(t)
	admin := testDBConn(t, testDBName)
	role := fmt.Sprintf("ice_nohistory_%d", os.Getpid())
	mustExec(t, admin, `CREATE ROLE `+role+` LOGIN`, `GRANT SELECT ON nodes TO `+role)
	t.Cleanup(func() { mustExec(t, admin, `REVOKE ALL ON nodes FROM `+role, `DROP ROLE `+role) })
	d := openTest(t, strings.Replace(testDSN, "postgres@", role+"@", 1), dbconn.Options{})
	r, err := d.History(context.Background(), 0, 10)
	if err != nil || !r.Present || !strings.Contains(r.Warning, "grant SELECT on it") {
		t.Fatalf("not granted: %+v, %v", r, err)
	}
}
