package db

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// SnapshotSince is Snapshot, except that when known is not nil and the
// nodes table still probes as known, the nodes are not read (the probe
// alone of SnapshotChanges).
func (d *DB) SnapshotSince(ctx context.Context, known *NodeProbe) (*Snapshot, error) {
	return d.snapshotRetrying(ctx, since{probe: known})
}

// ironicWriter drives Ironic 21.4's own DB API (db/testdata/ironic_writes.py)
// against one database.
type ironicWriter struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startIronicWriter(t *testing.T, url string) *ironicWriter {
	t.Helper()
	py, err := testenv.Python()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/ironic_writes.py", url)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3-ironic is needed (apt-get install python3-ironic): %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("ironic_writes.py: %v: %s", err, stderr.String())
		}
	})
	return &ironicWriter{in: in, out: bufio.NewScanner(out)}
}

func (w *ironicWriter) do(t *testing.T, cmd map[string]any) {
	t.Helper()
	line, _ := json.Marshal(cmd)
	if _, err := w.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if !w.out.Scan() {
		t.Fatalf("ironic_writes.py ended: %v", w.out.Err())
	}
	if got := w.out.Text(); got != "ok" {
		t.Fatalf("%s: %s", line, got)
	}
}

// ironicStep is one step of the tests of Ironic's writes: commands of
// ironic_writes.py run between two snapshots.
type ironicStep struct {
	name string
	cmds []map[string]any
}

// The nodes of ironicSteps.
const u1, u2, u3 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222",
	"33333333-3333-4333-8333-333333333333"

// ironicSteps are the writes Ironic itself makes to nodes, from an empty
// table back to an empty table: enrolment, the lock (reserve and release),
// power and provision state, conductor group, driver and name changes,
// the newest node replaced (deleted, and another enrolled: SQLite gives
// the new one the deleted one's id), deletion.
var ironicSteps = []ironicStep{
	{"enrol", []map[string]any{{"op": "create_node", "values": map[string]any{"uuid": u1, "driver": "ipmi", "name": "n1"}}}},
	{"enrol another", []map[string]any{{"op": "create_node", "values": map[string]any{"uuid": u2, "driver": "ipmi"}}}},
	{"reserve", []map[string]any{{"op": "reserve_node", "tag": "c1", "uuid": u1}}},
	{"release", []map[string]any{{"op": "release_node", "tag": "c1", "uuid": u1}}},
	{"power state", []map[string]any{{"op": "update_node", "uuid": u1, "values": map[string]any{"power_state": "power on"}}}},
	{"provision state", []map[string]any{{"op": "update_node", "uuid": u1, "values": map[string]any{"provision_state": "manageable"}}}},
	{"conductor group", []map[string]any{{"op": "update_node", "uuid": u2, "values": map[string]any{"conductor_group": "rack2"}}}},
	{"driver", []map[string]any{{"op": "update_node", "uuid": u2, "values": map[string]any{"driver": "redfish"}}}},
	{"name", []map[string]any{{"op": "update_node", "uuid": u2, "values": map[string]any{"name": "n2"}}}},
	{"replace the newest", []map[string]any{{"op": "destroy_node", "uuid": u2},
		{"op": "create_node", "values": map[string]any{"uuid": u3, "driver": "ipmi"}}}},
	{"delete the newest", []map[string]any{{"op": "destroy_node", "uuid": u3}}},
	{"delete the last", []map[string]any{{"op": "destroy_node", "uuid": u1}}},
}

// ageNodes is the statement that moves every node's updated_at and
// created_at an hour back, per backend.
var ageNodes = map[rules.Backend]string{
	rules.PostgreSQL: `UPDATE nodes SET updated_at = updated_at - interval '1 hour', created_at = created_at - interval '1 hour'`,
	rules.MySQL:      `UPDATE nodes SET updated_at = updated_at - interval 1 hour, created_at = created_at - interval 1 hour`,
	rules.SQLite: `UPDATE nodes SET updated_at = strftime('%Y-%m-%d %H:%M:%f000', updated_at, '-1 hour'),
	                                 created_at = strftime('%Y-%m-%d %H:%M:%f000', created_at, '-1 hour')`,
}

// TestProbeSeesIronicWrites proves SQLNodeProbe against the writes Ironic
// itself makes to nodes (ironicSteps). Before each step every updated_at
// and created_at is moved an hour back, as if the write came long after
// the previous one (writes within one tick of a coarse clock are the
// cache's ProbeWindow's business); an unchanged table must probe equal.
func TestProbeSeesIronicWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		d := openTest(t, b.dsn, dbconn.Options{})
		w := startIronicWriter(t, b.dsn)
		ctx := context.Background()
		before, err := d.SnapshotSince(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range ironicSteps {
			if before.NodeProbe.Count > 0 {
				mustExec(t, conn, ageNodes[b.kind])
				if before, err = d.SnapshotSince(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			same, err := d.SnapshotSince(ctx, &before.NodeProbe)
			if err != nil {
				t.Fatal(err)
			}
			if same.Nodes != nil || same.NodeRead != NodeReadSkipped {
				t.Fatalf("before %s: an unchanged table probed different: %+v then %+v", step.name, before.NodeProbe, same.NodeProbe)
			}
			for _, cmd := range step.cmds {
				w.do(t, cmd)
			}
			after, err := d.SnapshotSince(ctx, &before.NodeProbe)
			if err != nil {
				t.Fatal(err)
			}
			if after.NodeRead != NodeReadFull {
				t.Errorf("%s: the probe did not change: %+v", step.name, after.NodeProbe)
			}
			p, q := before.NodeProbe, after.NodeProbe
			t.Logf("%s: count %d->%d, max(id) %d->%d, updated_at bumped %v, created_at bumped %v, reserved %d->%d", step.name,
				p.Count, q.Count, p.MaxID, q.MaxID, q.MaxUpdatedAt.After(p.MaxUpdatedAt), q.MaxCreatedAt.After(p.MaxCreatedAt),
				p.Reserved, q.Reserved)
			if len(after.Nodes) != int(q.Count) {
				t.Errorf("%s: %d nodes read, the probe counted %d", step.name, len(after.Nodes), q.Count)
			}
			before = after
		}
	})
}
