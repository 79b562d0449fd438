package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
)

// TestCacheSharesOneRefresh: concurrent callers wait for one read, and a
// caller whose context ends gets the current view instead of blocking.
func TestCacheSharesOneRefresh(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	release := src.Block()
	defer release()
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: time.Hour,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]View, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = cache.Get(context.Background()) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if v := cache.Get(ctx); v.Topology != nil || !errors.Is(v.Err, ErrNoData) {
		t.Errorf("impatient caller got %+v, want the empty view", v)
	}
	release()
	wg.Wait()
	if n := src.Reads(); n != 1 {
		t.Errorf("%d database reads for concurrent callers, want 1", n)
	}
	for i, v := range results {
		if !v.Up() {
			t.Errorf("caller %d: not up: %v", i, v.Err)
		}
	}
	cache.Get(context.Background())
	if n := src.Reads(); n != 1 {
		t.Errorf("read again within min interval (%d reads)", n)
	}
}

// TestCacheReportsRefreshes: OnRefresh hears of every refresh, with its
// error.
func TestCacheReportsRefreshes(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	var got []Refresh
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings,
		Now: func() time.Time { return testNow }, OnRefresh: func(r Refresh) { got = append(got, r) }})
	if err != nil {
		t.Fatal(err)
	}
	cache.Get(context.Background())
	src.Set(nil, context.DeadlineExceeded)
	cache.Get(context.Background())
	if len(got) != 2 || got[0].Err != nil || got[1].Err == nil || !got[0].Started.Equal(testNow) {
		t.Errorf("refreshes reported: %+v", got)
	}
}

// probingSource is a Source over a fixed snapshot whose node probe
// the test sets; it counts the snapshots that read nodes.
type probingSource struct {
	mu        sync.Mutex
	snap      *db.Snapshot
	probe     db.NodeProbe
	nodeReads int
}

func (p *probingSource) SnapshotChanges(ctx context.Context, known *db.Known) (*db.Snapshot, error) {
	if known == nil || known.Recent {
		return p.SnapshotSince(ctx, nil)
	}
	return p.SnapshotSince(ctx, &known.Probe)
}

func (p *probingSource) SnapshotSince(_ context.Context, known *db.NodeProbe) (*db.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.snap
	s.NodeProbe = p.probe
	if known != nil && *known == p.probe {
		s.Nodes, s.NodeRead = nil, db.NodeReadSkipped
		return &s, nil
	}
	p.nodeReads++
	return &s, nil
}

// TestCacheSkipsUnchangedNodes: nodes are read again only when the probe
// changed, when the last read is FullInterval old, or when the probe's
// latest updated_at or created_at was within ProbeWindow of the refresh
// that took it;
// liveness is judged at every refresh all the same.
func TestCacheSkipsUnchangedNodes(t *testing.T) {
	now := testNow
	src := &probingSource{snap: fixture.Golden(), probe: db.NodeProbe{Count: 3, MaxID: 3, MaxUpdatedAt: testNow.Add(-time.Hour)}}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, FullInterval: time.Minute,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string, advance time.Duration, wantReads int) View {
		t.Helper()
		now = now.Add(advance)
		v := cache.Get(context.Background())
		if !v.Up() || len(v.Topology.Nodes) != 3 {
			t.Fatalf("%s: view %v with %d nodes", name, v.Err, len(v.Topology.Nodes))
		}
		if src.nodeReads != wantReads {
			t.Errorf("%s: %d node reads, want %d", name, src.nodeReads, wantReads)
		}
		return v
	}
	first := step("first refresh", 0, 1)
	second := step("unchanged", time.Second, 1)
	if first.Topology.NodeGeneration != second.Topology.NodeGeneration {
		t.Errorf("unchanged nodes got a new node generation")
	}
	if !sharesNodes(first.Topology, second.Topology) {
		t.Errorf("a refresh over unchanged nodes and conductors recomputed the node results")
	}
	// The golden fleet's c-alive heartbeat is 10s old at testNow: 60s
	// later it is dead, though the nodes were not read.
	c, _ := step("unchanged, a minute less a second later", 58*time.Second, 1).Topology.Conductor("c-alive")
	if c.Alive {
		t.Errorf("liveness not re-judged on a refresh that skipped the nodes")
	}
	step("the full interval", time.Second, 2)
	src.probe.Reserved++
	step("a changed probe", time.Second, 3)
	src.probe.MaxUpdatedAt = now // a write a second before the next refresh
	step("a write within the probe window", time.Second, 4)
	step("the next refresh does not trust that probe", time.Second, 5)
	step("but the one after does", time.Second, 5)
	src.probe.MaxCreatedAt = now // an enrolment a second before the next refresh
	step("an enrolment within the probe window", time.Second, 6)
	step("the next refresh does not trust that probe either", time.Second, 7)
	step("but the one after does", time.Second, 7)
}

// TestCacheReadersDoNotWaitForASilentDatabase: a reader without a deadline
// gets the last topology, marked stale, while a refresh hangs; a reader with
// a deadline waits for the refresh.
func TestCacheReadersDoNotWaitForASilentDatabase(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	now := testNow
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: time.Second,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	first := cache.Get(context.Background())
	if !first.Up() {
		t.Fatalf("first refresh: %v", first.Err)
	}
	release := src.Block()
	defer release()
	now = now.Add(time.Minute) // stale: the next Get refreshes, and the refresh hangs
	v := cache.Get(context.Background())
	if v.Topology != first.Topology || !v.LastSuccess.Equal(first.LastSuccess) {
		t.Errorf("reader during a hung refresh got %+v, want the last topology", v)
	}
	done := make(chan View)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		done <- cache.Get(ctx)
	}()
	release()
	if v := <-done; !v.Up() || !v.LastSuccess.Equal(now) {
		t.Errorf("reader with a deadline got %+v, want the refresh it waited for", v)
	}
}

// clock is a settable clock the refreshing goroutine may read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// getWithin returns what cache.Get(ctx) returned, or ok false when it did
// not return within d.
func getWithin(ctx context.Context, cache *Cache, d time.Duration) (v View, ok bool, later <-chan View) {
	ch := make(chan View, 1)
	go func() { ch <- cache.Get(ctx) }()
	select {
	case v := <-ch:
		return v, true, nil
	case <-time.After(d):
		return View{}, false, ch
	}
}

// TestCacheRefreshesAheadOfReaders: while the sidecar is in use (the view
// older than MinInterval but within MaxAge), the reader that starts the
// refresh and those during it get the current view at once, scrapes with
// a deadline included; one refresh runs; once it lands it is served.
func TestCacheRefreshesAheadOfReaders(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	clk := &clock{t: testNow}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: 5 * time.Second,
		MaxWait: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if got := cache.MaxAge(); got != 6*time.Second {
		t.Errorf("MaxAge %v, want MinInterval plus a second", got)
	}
	first := cache.Get(context.Background())
	release := src.Block() // the refresh runs until released
	defer release()
	clk.Add(5500 * time.Millisecond)
	scrape, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for i, ctx := range []context.Context{context.Background(), context.Background(), scrape} {
		v, ok, _ := getWithin(ctx, cache, 5*time.Second)
		if !ok {
			t.Fatalf("reader %d held by the running refresh", i)
		}
		if v.Topology != first.Topology || !v.Up() {
			t.Errorf("reader %d got %+v, want the current view", i, v)
		}
		for deadline := time.Now().Add(5 * time.Second); src.Reads() < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no refresh started ahead of the readers")
			}
		}
		clk.Add(200 * time.Millisecond) // the refresh has read the clock
	}
	// past MaxAge while the refresh started ahead still runs (a full read
	// of 1M nodes takes seconds): still not held
	clk.Add(2 * time.Second)
	if v, ok, _ := getWithin(context.Background(), cache, 5*time.Second); !ok || v.Topology != first.Topology {
		t.Fatalf("a reader past MaxAge was held by the refresh started ahead (returned %v): %+v", ok, v)
	}
	release()
	for deadline := time.Now().Add(5 * time.Second); cache.Current().Topology == first.Topology; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the refresh ahead did not land")
		}
	}
	if v := cache.Get(context.Background()); !v.LastSuccess.Equal(testNow.Add(5500*time.Millisecond)) || !v.Up() {
		t.Errorf("after the refresh: %+v, want the topology read when it started", v)
	}
	if n := src.Reads(); n != 2 {
		t.Errorf("%d reads, want the first and one refresh ahead", n)
	}
}

// TestCacheIdleReaderWaits: a reader that finds the view older than MaxAge
// (nobody read for that long) waits for the refresh it starts and gets
// what it read; while nobody reads, nothing is read and no goroutine is
// left running.
func TestCacheIdleReaderWaits(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	clk := &clock{t: testNow}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: 5 * time.Second,
		MaxWait: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	cache.Get(context.Background())
	for _, idle := range []time.Duration{6 * time.Second, time.Hour} {
		clk.Add(idle)
		reads := src.Reads()
		time.Sleep(20 * time.Millisecond)
		if n := src.Reads(); n != reads {
			t.Errorf("idle %v: %d reads while nobody read", idle, n-reads)
		}
		release := src.Block()
		v, ok, later := getWithin(context.Background(), cache, 50*time.Millisecond)
		if ok {
			t.Errorf("idle %v: the reader did not wait for the refresh: %+v", idle, v)
		} else {
			release()
			v = <-later
		}
		release()
		if !v.Up() || !v.LastSuccess.Equal(clk.Now()) {
			t.Errorf("idle %v: the reader got %+v, want the topology read after it came", idle, v)
		}
	}
	// The refresh's goroutine ends with it: no goroutine outlives a Get.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left running, %d before", runtime.NumGoroutine(), goroutines)
		}
	}
}

// TestCacheFailedRefreshAheadServesStale: a refresh ahead that fails
// leaves the last good topology served, its error and age visible; past
// MaxAge, readers wait for the next refresh and get it stale all the same.
func TestCacheFailedRefreshAheadServesStale(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	clk := &clock{t: testNow}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: 5 * time.Second,
		MaxWait: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	first := cache.Get(context.Background())
	errDown := errors.New("connection refused")
	src.Set(nil, errDown)
	release := src.Block()
	defer release()
	clk.Add(5500 * time.Millisecond)
	if v, ok, _ := getWithin(context.Background(), cache, 5*time.Second); !ok || v.Topology != first.Topology {
		t.Fatalf("reader during a refresh ahead: returned %v, %+v; want the current view at once", ok, v)
	}
	release()
	for deadline := time.Now().Add(5 * time.Second); cache.Current().Err == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failing refresh did not land")
		}
	}
	for i, step := range []time.Duration{0, time.Minute} {
		clk.Add(step)
		v := cache.Get(context.Background())
		if v.Topology != first.Topology || !v.LastSuccess.Equal(first.LastSuccess) || !errors.Is(v.Err, errDown) || v.Up() {
			t.Errorf("step %d: %+v, want the last good topology with the refresh's error", i, v)
		}
	}
	if n := src.Reads(); n != 3 {
		t.Errorf("%d reads, want 3", n)
	}
}

// TestCacheLogsWhatItServes: the first failed refresh does not claim a last
// good topology; a missing table is logged as permanent, a lost connection
// as transient; OnRefresh gets the topology built.
func TestCacheLogsWhatItServes(t *testing.T) {
	var logs strings.Builder
	var built []*Topology
	src := fixture.NewSource(nil)
	src.Set(nil, fmt.Errorf("reading conductors: %w", db.ErrNotIronic))
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings,
		Now: func() time.Time { return testNow }, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnRefresh: func(r Refresh) { built = append(built, r.Topology) }})
	if err != nil {
		t.Fatal(err)
	}
	if v := cache.Get(context.Background()); !v.Permanent() || v.Topology != nil {
		t.Errorf("view %+v: want a permanent failure and no topology", v)
	}
	src.Set(fixture.Golden(), nil)
	cache.Get(context.Background())
	src.Set(nil, errors.New("connection refused"))
	if v := cache.Get(context.Background()); v.Permanent() || v.Topology == nil {
		t.Errorf("view %+v: want a transient failure over the last topology", v)
	}
	// The failures and the recovery, without the once-per-change line that
	// says which Ironic rules the topology was judged by.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(l, `msg="Ironic rules"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 ||
		!strings.Contains(lines[0], "no topology has been read yet") || !strings.Contains(lines[0], "problem=permanent") ||
		strings.Contains(lines[0], "last good") ||
		!strings.Contains(lines[1], "first topology read") || strings.Contains(lines[1], "down_since") ||
		!strings.Contains(lines[2], "serving the last good topology") || !strings.Contains(lines[2], "problem=transient") {
		t.Errorf("logs:\n%s", logs.String())
	}
	if len(built) != 3 || built[0] != nil || built[1] == nil || built[2] != nil {
		t.Errorf("OnRefresh topologies %v", built)
	}
}

// deltaSource is a Source over a fleet the test changes: a delta
// answer carries every node, the unchanged ones copied from the known
// nodes it was given (as db.DB.SnapshotChanges merges them), the changed
// ones from the fleet. It records what it was given.
type deltaSource struct {
	mu    sync.Mutex
	fleet *db.Snapshot
	probe db.NodeProbe
	// changed are the ids written since the last read.
	changed map[int64]bool
	known   []*db.Known // nil for a read without a known probe
}

func (s *deltaSource) SnapshotChanges(_ context.Context, known *db.Known) (*db.Snapshot, error) {
	return s.read(known, true), nil
}

func (s *deltaSource) read(known *db.Known, delta bool) *db.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known = append(s.known, known)
	snap := *s.fleet
	snap.NodeProbe = s.probe
	switch {
	case known != nil && !known.Recent && known.Probe == s.probe:
		snap.Nodes, snap.NodeRead = nil, db.NodeReadSkipped
	case known != nil && delta:
		byID := map[int64]*db.Node{}
		for _, n := range known.Nodes {
			byID[n.ID] = n
		}
		snap.Nodes, snap.NodeRead = nil, db.NodeReadDelta
		for _, n := range s.fleet.Nodes {
			if k, ok := byID[n.ID]; ok && !s.changed[n.ID] {
				n = k
			}
			snap.Nodes = append(snap.Nodes, n)
		}
	default:
		snap.Nodes, snap.NodeRead = slices.Clone(s.fleet.Nodes), db.NodeReadFull
	}
	if snap.NodeRead != db.NodeReadSkipped {
		s.changed = map[int64]bool{}
	}
	return &snap
}

// write changes the fleet by f, which returns the ids it wrote, and moves
// the probe on.
func (s *deltaSource) write(f func(nodes []*db.Node) ([]*db.Node, []int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	s.fleet.Nodes, ids = f(copyNodes(s.fleet.Nodes)) // f writes them: the snapshots read before keep theirs
	for _, id := range ids {
		s.changed[id] = true
	}
	s.probe.Count, s.probe.Reserved = int64(len(s.fleet.Nodes)), s.probe.Reserved+1
}

// deltaFleet is 300 nodes in two groups and two drivers over the golden
// conductors.
func deltaFleet() *db.Snapshot {
	snap := fixture.Golden()
	snap.Nodes = nil
	for i := range 300 {
		n := fixture.Node(int64(i+1), fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1),
			[]string{"", "rack2"}[i%2], []string{"ipmi", "redfish"}[i/2%2])
		if i%7 == 0 {
			n.Reservation = fixture.Ptr("c-two")
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	return snap
}

// sameTopology fails t unless got and want say the same of every
// conductor, node, ring and count (not the history: Remapped, the node
// generation).
func sameTopology(t *testing.T, what string, got, want *Topology) {
	t.Helper()
	rings := func(tp *Topology) []string {
		var out []string
		for _, r := range tp.Rings {
			out = append(out, fmt.Sprintf("%s %d %v", r.Key(), r.Nodes, r.Ring.Hosts()))
		}
		return out
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"conductors", got.Conductors, want.Conductors}, {"nodes", got.Nodes, want.Nodes},
		{"rings", rings(got), rings(want)}, {"orphans", got.Orphans, want.Orphans},
		{"reservations", got.Reservations, want.Reservations},
		{"affinity", got.AffinityUnavailable, want.AffinityUnavailable}, {"stuck", got.Stuck, want.Stuck},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %s differ:\n got  %v\n want %v", what, c.name, c.got, c.want)
		}
	}
}

// TestCacheDeltaRefresh: the cache passes its nodes,
// probe and ProbeWindow when the probe changed, and the topology built
// over the previous one from the merged nodes is the one a full read
// builds from scratch; the delta reads do not postpone the full read due
// FullInterval after the last one; each refresh reports its kind of read.
func TestCacheDeltaRefresh(t *testing.T) {
	now := testNow
	src := &deltaSource{fleet: deltaFleet(), probe: db.NodeProbe{Count: 300, MaxID: 300, MaxUpdatedAt: testNow.Add(-time.Hour)},
		changed: map[int64]bool{}}
	var reads []db.NodeRead
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, FullInterval: time.Minute,
		Now: func() time.Time { return now }, OnRefresh: func(r Refresh) { reads = append(reads, r.NodeRead) }})
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(name string, advance time.Duration) *Topology {
		t.Helper()
		now = now.Add(advance)
		v := cache.Get(context.Background())
		if !v.Up() {
			t.Fatalf("%s: %v", name, v.Err)
		}
		fresh, err := Build(&db.Snapshot{Backend: src.fleet.Backend, Conductors: src.fleet.Conductors, Nodes: src.fleet.Nodes},
			testSettings, now.UTC(), nil)
		if err != nil {
			t.Fatal(err)
		}
		sameTopology(t, name, v.Topology, fresh)
		return v.Topology
	}
	first := refresh("first", 0)
	src.write(func(nodes []*db.Node) ([]*db.Node, []int64) {
		nodes[10].Driver, nodes[11].ConductorGroup, nodes[12].Reservation = "redfish", "", nil
		nodes = slices.Delete(nodes, 20, 21) // node 21
		nodes = append(nodes, fixture.Node(301, "00000301-0000-4000-8000-000000000000", "rack2", "ipmi"))
		return nodes, []int64{11, 12, 13, 301}
	})
	refresh("a delta", time.Second)
	if k := src.known[len(src.known)-1]; k == nil || k.Window != DefaultProbeWindow || k.Probe.Count != 300 ||
		len(k.Nodes) != 300 || k.Nodes[0] != first.Nodes[0].Node {
		t.Errorf("the delta read was given %+v, want the first read's probe and nodes and the probe window", k)
	}
	src.write(func(nodes []*db.Node) ([]*db.Node, []int64) {
		nodes[0].ConductorGroup = "rack2"
		return nodes, []int64{1}
	})
	refresh("a delta over a delta", time.Second)
	refresh("unchanged", time.Second)
	// A write at the very time of the next refresh: its probe is recent
	// (within the probe window), so the refresh after reads the changes
	// since it as a delta rather than trust it, and so on until the probe
	// is old enough to spare the read.
	writeAt := func(id int64, at time.Time) {
		src.write(func(nodes []*db.Node) ([]*db.Node, []int64) {
			nodes[id-1].Driver = map[string]string{"ipmi": "redfish", "redfish": "ipmi"}[nodes[id-1].Driver]
			return nodes, []int64{id}
		})
		src.probe.MaxUpdatedAt = at.UTC()
	}
	writeAt(7, now.Add(time.Second))
	refresh("a write at the refresh's time", time.Second)
	writeAt(8, now)
	refresh("a write after a recent probe", time.Second)
	if k := src.known[len(src.known)-1]; k == nil || !k.Recent {
		t.Errorf("the refresh after a recent probe was given %+v, want it marked recent", k)
	}
	refresh("nothing written since a recent probe", time.Second)
	refresh("the probe is old enough", time.Second)
	src.write(func(nodes []*db.Node) ([]*db.Node, []int64) {
		nodes[5].Driver = "ipmi"
		return nodes, []int64{6}
	})
	refresh("the full interval", 53*time.Second)
	want := []db.NodeRead{db.NodeReadFull, db.NodeReadDelta, db.NodeReadDelta, db.NodeReadSkipped,
		db.NodeReadDelta, db.NodeReadDelta, db.NodeReadDelta, db.NodeReadSkipped, db.NodeReadFull}
	if !slices.Equal(reads, want) {
		t.Errorf("refreshes read %v, want %v", reads, want)
	}
	if k := src.known[len(src.known)-1]; k != nil {
		t.Errorf("the read due FullInterval after the last full one was given %+v", k)
	}
}
