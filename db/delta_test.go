package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// testWindow is the delta reads' Window in these tests: the cache's
// default ProbeWindow.
const testWindow = 2 * time.Second

// deltaRead is one SnapshotChanges and the stages of its transaction.
type deltaRead struct {
	snap   *Snapshot
	stages []string
}

func (r deltaRead) saw(stage string) bool { return slices.Contains(r.stages, stage) }

// readDeltaAndFull reads a SnapshotChanges over known, then a full Snapshot
// of the same (unchanged) database, and fails t unless both have the same
// probe, conductors and nodes: the delta-merged nodes (the known ones when
// the probe said unchanged, as the cache takes them) are what a full read
// gives.
func readDeltaAndFull(t *testing.T, d *DB, known *Known, what string) deltaRead {
	t.Helper()
	ctx := context.Background()
	var r deltaRead
	setHook(d, func(_ context.Context, stage string, _ *sqlx.Tx) error {
		r.stages = append(r.stages, stage)
		return nil
	})
	var err error
	if r.snap, err = d.SnapshotChanges(ctx, known); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	d.hook = nil
	if r.snap.NodeRead == NodeReadSkipped {
		// The cache's part: the known nodes stand.
		unchanged := *r.snap
		unchanged.Nodes = known.Nodes
		r.snap = &unchanged
	}
	full, err := d.Snapshot(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.snap.NodeProbe != full.NodeProbe {
		t.Fatalf("%s: the database changed under the test: probes %+v and %+v", what, r.snap.NodeProbe, full.NodeProbe)
	}
	if diff := cmp.Diff(full.Nodes, r.snap.Nodes); diff != "" {
		t.Errorf("%s: the %s read's nodes differ from a full read's (-full +%s):\n%s", what, r.snap.NodeRead, r.snap.NodeRead, diff)
	}
	if diff := cmp.Diff(full.Conductors, r.snap.Conductors); diff != "" {
		t.Errorf("%s: conductors differ (-full +delta):\n%s", what, diff)
	}
	if !slices.Equal(full.Warnings, r.snap.Warnings) {
		t.Errorf("%s: warnings %q, a full read's %q", what, r.snap.Warnings, full.Warnings)
	}
	return r
}

// knownOf is what a cache would pass SnapshotChanges after snap.
func knownOf(snap *Snapshot) *Known {
	return &Known{Probe: snap.NodeProbe, Nodes: snap.Nodes, Window: testWindow}
}

// TestDeltaSeesIronicWrites: after each of Ironic's own writes to nodes
// (ironicSteps, through Ironic 21.4's DB API), a delta read over the
// previous snapshot gives the nodes a full read gives, on every backend;
// it is a delta (no full node read in its transaction) except from an
// empty table, whose probe bounds no write; a deletion reads the id list.
// As in TestProbeSeesIronicWrites, every timestamp is moved an hour back
// before each step.
func TestDeltaSeesIronicWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		d := openTest(t, b.dsn, dbconn.Options{})
		w := startIronicWriter(t, b.dsn)
		ctx := context.Background()
		for i, step := range ironicSteps {
			if i > 0 {
				mustExec(t, conn, ageNodes[b.kind])
			}
			before, err := d.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range step.cmds {
				w.do(t, cmd)
			}
			r := readDeltaAndFull(t, d, knownOf(before), step.name)
			want := NodeReadDelta
			if before.NodeProbe.Count == 0 {
				want = NodeReadFull
			}
			if r.snap.NodeRead != want || (want == NodeReadDelta && (!r.saw("changed nodes") || r.saw("nodes"))) {
				t.Errorf("%s: a %s read (stages %q), want %s", step.name, r.snap.NodeRead, r.stages, want)
			}
			// A deletion reads the id list; a step that deletes nothing
			// does not.
			deletes := slices.ContainsFunc(step.cmds, func(c map[string]any) bool { return c["op"] == "destroy_node" })
			if only := deletes && len(step.cmds) == 1; only && !r.saw("node ids") || !deletes && r.saw("node ids") {
				t.Errorf("%s: stages %q: the id list read %v", step.name, r.stages, r.saw("node ids"))
			}
			t.Logf("%s: %s read, %d nodes, stages %q", step.name, r.snap.NodeRead, len(r.snap.Nodes), r.stages)
		}
	})
}

// sqlTime is t as Ironic's drivers store a DATETIME: text with
// microseconds, which SQLite keeps as it is (SQLAlchemy's form),
// PostgreSQL parses and MySQL rounds to its whole seconds.
func sqlTime(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }

// randomWrites makes n random writes to nodes through plain SQL, as Ironic
// makes them: an update sets updated_at, an enrolment sets created_at and
// leaves updated_at NULL, a deletion removes the row (the newest one at
// times, whose id SQLite then gives to the next enrolment). The writes
// happen at *clock, which moves on by 2 to 4 windows first: the snapshot
// before them was taken at least a window after its latest write, as the
// cache's probe asks; each timestamp is that clock less up to a window (a
// host whose clock is behind), and a few milliseconds later for each
// write. ids are the nodes before the writes; it returns them after.
func randomWrites(t *testing.T, b *testBackend, conn *sql.DB, rng *rand.Rand, clock *time.Time, ids []int64, n int, seq *int) []int64 {
	t.Helper()
	*clock = clock.Add(2*testWindow + time.Duration(rng.Int64N(int64(2*testWindow))))
	stamp := func() string {
		*clock = clock.Add(time.Duration(rng.Int64N(int64(10 * time.Millisecond))))
		return sqlTime(clock.Add(-time.Duration(rng.Int64N(int64(testWindow)))))
	}
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	for range n {
		switch op := rng.IntN(10); {
		case op < 2 || len(ids) < 3:
			*seq++
			b.exec(t, conn, fmt.Sprintf(`INSERT INTO nodes (uuid, driver, conductor_group, power_state, provision_state, created_at)
VALUES ('%08x-0000-4000-8000-000000000000', '%s', '%s', 'power off', 'enroll', %s)`,
				*seq, pick("ipmi", "redfish"), pick("", "rack2"), stamp()))
		case op < 4:
			i := len(ids) - 1 // the newest, or any
			if rng.IntN(2) == 0 {
				i = rng.IntN(len(ids))
			}
			b.exec(t, conn, fmt.Sprintf(`DELETE FROM nodes WHERE id = %d`, ids[i]))
		default:
			set := pick(
				"driver = '"+pick("ipmi", "redfish", "idrac")+"'",
				"conductor_group = '"+pick("", "rack2", "Rack2")+"'",
				"reservation = "+pick("NULL", "'c1'", "'c2'"),
				"power_state = '"+pick("power on", "power off")+"'",
				"provision_state = '"+pick("active", "deploying", "manageable", "available")+"'",
				"maintenance = "+pick("true", "false"),
				"owner = "+pick("NULL", "'p1'"))
			b.exec(t, conn, fmt.Sprintf(`UPDATE nodes SET %s, updated_at = %s WHERE id = %d`, set, stamp(), ids[rng.IntN(len(ids))]))
		}
		ids = nodeIDs(t, conn)
	}
	return ids
}

// nodeIDs lists the ids of the nodes.
func nodeIDs(t *testing.T, conn *sql.DB) []int64 {
	t.Helper()
	var ids []int64
	rows, err := conn.Query(SQLNodeIDs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestDeltaRandomized: over many rounds of random updates, enrolments and
// deletions written as Ironic writes them (randomWrites), each delta read,
// merged into the previous delta read's nodes (never a full read's), gives
// the nodes a full read gives. Most rounds must be deltas, and some must
// have found deletions through the id list.
func TestDeltaRandomized(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 12))
		d := openTest(t, b.dsn, dbconn.Options{})
		var seq int
		clock := time.Now()
		ids := randomWrites(t, b, conn, rng, &clock, nil, 20, &seq)
		prev, err := d.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rounds := 60
		if testing.Short() {
			rounds = 15
		}
		kinds := map[NodeRead]int{}
		var idLists int
		for round := range rounds {
			ids = randomWrites(t, b, conn, rng, &clock, ids, 1+rng.IntN(4), &seq)
			r := readDeltaAndFull(t, d, knownOf(prev), fmt.Sprintf("round %d", round))
			if t.Failed() {
				t.Fatalf("seed %d, round %d: stages %q", seed, round, r.stages)
			}
			kinds[r.snap.NodeRead]++
			if r.saw("node ids") {
				idLists++
			}
			// The next delta merges into this one's nodes, as the
			// cache's would.
			prev = r.snap
		}
		t.Logf("%d rounds: %v; %d read the id list", rounds, kinds, idLists)
		// A round may undo itself (a node enrolled and deleted): skipped.
		if changed := rounds - kinds[NodeReadSkipped]; kinds[NodeReadDelta] < changed*9/10 || changed < rounds/2 || idLists == 0 {
			t.Errorf("%d rounds: %v, %d read the id list: want at least 90%% deltas and some deletions found", rounds, kinds, idLists)
		}
	})
}

// TestDeltaFallsBack: a delta read that cannot be proven exact reads every
// node instead, in the same transaction, and the nodes are right either
// way: merged nodes that outnumber the probe after the deleted ids are
// dropped (a row inserted unlike Ironic inserts, with an old created_at and
// an id below max(id)); known nodes that lack a row; a probe that is not
// the last node read's; a last read whose rows had problems; changed rows
// with problems (SQLite: an updated_at that is not a timestamp).
func TestDeltaFallsBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		d := openTest(t, b.dsn, dbconn.Options{})
		ctx := context.Background()
		hourAgo := time.Now().Add(-time.Hour)
		old := sqlTime(hourAgo.Add(-time.Hour))
		// Nodes 2, 4, ..., 12, written a minute apart up to an hour ago:
		// a delta reads node 12 again, the newest.
		fleet := func(t *testing.T) *Snapshot {
			t.Helper()
			b.reset(t, conn)
			for i := 1; i <= 6; i++ {
				at := sqlTime(hourAgo.Add(time.Duration(i-6) * time.Minute))
				b.exec(t, conn, fmt.Sprintf(`INSERT INTO nodes (id, uuid, driver, conductor_group, created_at, updated_at)
VALUES (%d, '%08x-0000-4000-8000-000000000000', 'ipmi', '', %s, %s)`, 2*i, i, at, at))
			}
			snap, err := d.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return snap
		}
		wantFull := func(t *testing.T, r deltaRead, delta bool) {
			t.Helper()
			if r.snap.NodeRead != NodeReadFull || !r.saw("nodes") || r.saw("changed nodes") != delta {
				t.Errorf("a %s read, stages %q: want a full read (after a delta read: %v)", r.snap.NodeRead, r.stages, delta)
			}
		}
		t.Run("deletion", func(t *testing.T) {
			before := fleet(t)
			b.exec(t, conn, `DELETE FROM nodes WHERE id = 4`)
			r := readDeltaAndFull(t, d, knownOf(before), "deletion")
			if r.snap.NodeRead != NodeReadDelta || !r.saw("node ids") || r.saw("nodes") {
				t.Errorf("a %s read, stages %q: want a delta that reads the id list", r.snap.NodeRead, r.stages)
			}
		})
		t.Run("counts still disagree", func(t *testing.T) {
			before := fleet(t)
			b.exec(t, conn, `DELETE FROM nodes WHERE id IN (4, 6)`,
				`INSERT INTO nodes (id, uuid, driver, conductor_group, created_at) VALUES (5, 'ffffffff-0000-4000-8000-000000000000', 'ipmi', '', `+old+`)`)
			r := readDeltaAndFull(t, d, knownOf(before), "counts still disagree")
			wantFull(t, r, true)
			if !r.saw("node ids") {
				t.Errorf("stages %q: the id list was not read", r.stages)
			}
		})
		t.Run("known nodes lack a row", func(t *testing.T) {
			before := fleet(t)
			known := knownOf(before)
			known.Nodes = slices.Delete(slices.Clone(known.Nodes), 2, 3)
			b.exec(t, conn, `UPDATE nodes SET driver = 'redfish', updated_at = `+sqlTime(time.Now())+` WHERE id = 2`)
			wantFull(t, readDeltaAndFull(t, d, known, "known nodes lack a row"), true)
		})
		t.Run("not the last read's probe", func(t *testing.T) {
			before := fleet(t)
			b.exec(t, conn, `UPDATE nodes SET driver = 'redfish', updated_at = `+sqlTime(time.Now())+` WHERE id = 2`)
			if _, err := d.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			b.exec(t, conn, `UPDATE nodes SET driver = 'idrac', updated_at = `+sqlTime(time.Now())+` WHERE id = 4`)
			wantFull(t, readDeltaAndFull(t, d, knownOf(before), "not the last read's probe"), false)
		})
		t.Run("empty table", func(t *testing.T) {
			b.reset(t, conn)
			before, err := d.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b.exec(t, conn, `INSERT INTO nodes (uuid, driver, conductor_group, created_at) VALUES ('eeeeeeee-0000-4000-8000-000000000000', 'ipmi', '', `+old+`)`)
			wantFull(t, readDeltaAndFull(t, d, knownOf(before), "empty table"), false)
		})
		if b.kind != rules.SQLite {
			return
		}
		t.Run("last read had problems", func(t *testing.T) {
			fleet(t)
			b.exec(t, conn, `UPDATE nodes SET updated_at = 'not a time' WHERE id = 2`)
			before, err := d.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Warnings) != 1 {
				t.Fatalf("warnings %q", before.Warnings)
			}
			b.exec(t, conn, `INSERT INTO nodes (uuid, driver, conductor_group, created_at) VALUES ('eeeeeeee-0000-4000-8000-000000000000', 'ipmi', '', `+sqlTime(time.Now())+`)`)
			wantFull(t, readDeltaAndFull(t, d, knownOf(before), "last read had problems"), false)
		})
		t.Run("changed rows have problems", func(t *testing.T) {
			before := fleet(t)
			b.exec(t, conn, `UPDATE nodes SET driver = 'redfish', updated_at = 'not a time' WHERE id = 4`)
			r := readDeltaAndFull(t, d, knownOf(before), "changed rows have problems")
			wantFull(t, r, true)
			if len(r.snap.Warnings) != 1 {
				t.Errorf("warnings %q, want the bad updated_at", r.snap.Warnings)
			}
		})
	})
}

// TestDeltaAfterARecentProbe: a write in the same clock tick as the known
// probe's latest leaves the probe unchanged; a probe marked Recent (taken
// within the window of its latest write) then does not spare the node
// read: the changes are read as a delta, equal to a full read.
func TestDeltaAfterARecentProbe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		d := openTest(t, b.dsn, dbconn.Options{})
		at := sqlTime(time.Now().Add(-time.Hour).Truncate(time.Second))
		for i := 1; i <= 3; i++ {
			b.exec(t, conn, fmt.Sprintf(`INSERT INTO nodes (id, uuid, driver, conductor_group, created_at, updated_at)
VALUES (%d, '%08x-0000-4000-8000-000000000000', 'ipmi', '', %s, %s)`, i, i, at, at))
		}
		before, err := d.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.exec(t, conn, `UPDATE nodes SET driver = 'redfish', updated_at = `+at+` WHERE id = 2`)
		known := knownOf(before)
		known.Recent = true
		r := readDeltaAndFull(t, d, known, "a write in the probe's tick")
		if r.snap.NodeProbe != before.NodeProbe {
			t.Fatalf("the write changed the probe: %+v, then %+v", before.NodeProbe, r.snap.NodeProbe)
		}
		if r.snap.NodeRead != NodeReadDelta || r.saw("nodes") {
			t.Errorf("a %s read, stages %q: want a delta", r.snap.NodeRead, r.stages)
		}
	})
}

// TestDeltaIDClause: a row enrolled with neither created_at nor updated_at
// (not Ironic's models: a restore, a hand-made row) is found by its id
// above the probe's max(id), without a full read.
func TestDeltaIDClause(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		d := openTest(t, b.dsn, dbconn.Options{})
		old := sqlTime(time.Now().Add(-time.Hour))
		b.exec(t, conn, `INSERT INTO nodes (id, uuid, driver, conductor_group, created_at, updated_at)
VALUES (1, '00000001-0000-4000-8000-000000000000', 'ipmi', '', `+old+`, `+old+`)`)
		before, err := d.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.exec(t, conn, `INSERT INTO nodes (id, uuid, driver, conductor_group) VALUES (2, '00000002-0000-4000-8000-000000000000', 'ipmi', '')`)
		r := readDeltaAndFull(t, d, knownOf(before), "enrolled without timestamps")
		if r.snap.NodeRead != NodeReadDelta || len(r.snap.Nodes) != 2 {
			t.Errorf("a %s read of %d nodes (stages %q), want a delta of 2", r.snap.NodeRead, len(r.snap.Nodes), r.stages)
		}
	})
}

// TestMergeNodes: the merge keeps id order, replaces rows by id, inserts
// new ones, never writes the known nodes; keepIDs drops the ids gone;
// agrees checks the merged nodes against a probe.
func TestMergeNodes(t *testing.T) {
	n := func(id int64, driver string) *Node { return &Node{ID: id, UUID: fmt.Sprint(id), Driver: driver} }
	prev := []*Node{n(2, "a"), n(4, "a"), n(6, "a"), n(8, "a")}
	keep := slices.Clone(prev)
	got := mergeNodes(prev, []*Node{n(1, "b"), n(4, "b"), n(5, "b"), n(8, "b"), n(9, "b")})
	want := []*Node{n(1, "b"), n(2, "a"), n(4, "b"), n(5, "b"), n(6, "a"), n(8, "b"), n(9, "b")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keep, prev); diff != "" {
		t.Errorf("the known nodes were written:\n%s", diff)
	}
	if got := mergeNodes(nil, nil); len(got) != 0 {
		t.Errorf("merge of nothing: %v", got)
	}
	got = keepIDs(got, []int64{1, 3, 5, 6, 9, 10})
	if ids := func() (out []int64) {
		for _, x := range got {
			out = append(out, x.ID)
		}
		return
	}(); !slices.Equal(ids, []int64{1, 5, 6, 9}) {
		t.Errorf("keepIDs: %v", ids)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	lock := "c1"
	nodes := []*Node{{ID: 1, CreatedAt: StampOf(now)}, {ID: 3, UpdatedAt: StampOf(now.Add(time.Second)), Reservation: &lock}}
	probe := NodeProbe{Count: 2, MaxID: 3, MaxUpdatedAt: now.Add(time.Second), Reserved: 1, MaxCreatedAt: now}
	if !agrees(nodes, probe) {
		t.Error("agrees: false for the probe of the nodes")
	}
	for name, p := range map[string]NodeProbe{
		"count":   {Count: 3, MaxID: 3, MaxUpdatedAt: now.Add(time.Second), Reserved: 1, MaxCreatedAt: now},
		"max id":  {Count: 2, MaxID: 4, MaxUpdatedAt: now.Add(time.Second), Reserved: 1, MaxCreatedAt: now},
		"updated": {Count: 2, MaxID: 3, MaxUpdatedAt: now, Reserved: 1, MaxCreatedAt: now},
		"locks":   {Count: 2, MaxID: 3, MaxUpdatedAt: now.Add(time.Second), MaxCreatedAt: now},
		"created": {Count: 2, MaxID: 3, MaxUpdatedAt: now.Add(time.Second), Reserved: 1},
	} {
		if agrees(nodes, p) {
			t.Errorf("agrees: true for a probe with another %s", name)
		}
	}
	if agrees([]*Node{nodes[1], nodes[0]}, probe) {
		t.Error("agrees: true for nodes out of id order")
	}
	for _, tc := range []struct {
		known Known
		want  string
	}{
		{Known{Probe: NodeProbe{MaxUpdatedAt: now}, Window: 2 * time.Second}, "2026-01-02 03:04:03"},
		{Known{Probe: NodeProbe{MaxUpdatedAt: now, MaxCreatedAt: now.Add(time.Hour)}}, "2026-01-02 04:04:05"},
		{Known{Probe: NodeProbe{MaxCreatedAt: now}, Window: -time.Second}, "2026-01-02 03:04:05"},
		{Known{Window: time.Second}, ""},
	} {
		if got, ok := changedSince(&tc.known); got != tc.want || ok != (tc.want != "") {
			t.Errorf("changedSince(%+v) = %q, %v; want %q", tc.known, got, ok, tc.want)
		}
	}
}

// TestReadsShareUnchangedNodes: a full read of an unchanged table returns
// the very node slice of the read before (so that the topology built from
// it is reused whole); after one row changed, a read shares every other
// node with the read before and has a new Node for that row only.
func TestReadsShareUnchangedNodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		conn := b.admin(t)
		b.reset(t, conn)
		var seq int
		clock := time.Now()
		randomWrites(t, b, conn, rand.New(rand.NewPCG(1, 2)), &clock, nil, 20, &seq)
		d := openTest(t, b.dsn, dbconn.Options{})
		ctx := context.Background()
		first, err := d.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := d.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Nodes) < 2 || &again.Nodes[0] != &first.Nodes[0] || len(again.Nodes) != len(first.Nodes) {
			t.Fatalf("a read of an unchanged table: %d nodes, not the slice of the read before (%d nodes)", len(again.Nodes), len(first.Nodes))
		}
		changed := first.Nodes[1]
		if _, err := conn.Exec(fmt.Sprintf("UPDATE nodes SET power_state = 'test power' WHERE id = %d", changed.ID)); err != nil {
			t.Fatal(err)
		}
		after, err := d.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Nodes) != len(first.Nodes) || &after.Nodes[0] == &first.Nodes[0] {
			t.Fatalf("after one update: %d nodes, the slice of the read before %v", len(after.Nodes), &after.Nodes[0] == &first.Nodes[0])
		}
		for i, n := range after.Nodes {
			if shared := n == first.Nodes[i]; shared != (n.ID != changed.ID) {
				t.Errorf("node %d: shared with the read before %v", n.ID, shared)
			}
		}
		if p := after.Nodes[1].PowerState; p == nil || *p != "test power" || (changed.PowerState != nil && *changed.PowerState == "test power") {
			t.Errorf("the updated node: %v; the read before's: %v", p, changed.PowerState)
		}
	})
}
