package novacache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

type fakeReader struct {
	snap *novadb.Snapshot
	err  error
}

func (f *fakeReader) Read(context.Context, []string, *novadb.Known) (*novadb.Snapshot, error) {
	return f.snap, f.err
}

// TestRefreshKeepsAnswerOnOutage: a read answers over the topology's nodes;
// a failing nova_api keeps the last answer, marked stale.
func TestRefreshKeepsAnswerOnOutage(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services:     []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{UUID: nova.KeyOf("n1"), Host: "c-a", HypervisorHostname: nova.KeyOf("n1")}}}
	r := &fakeReader{snap: &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}, {Node: &db.Node{UUID: "n2"}}}
	c := New(Config{Reader: r, Ironic: func(context.Context) *topology.Topology { return topo }, Now: func() time.Time { return now }})
	c.Refresh(context.Background())
	s := c.Current()
	if s.Err != nil || len(s.Cells) != 1 || s.Fleet.Len() != 2 || !s.Assumed {
		t.Fatalf("first read: %+v", s)
	}
	for i := range s.Fleet.Len() {
		if claims := slices.Collect(s.Fleet.Claims(i)); len(claims) != 1 || claims[0].Host != "c-a" {
			t.Errorf("node %d claims %+v, want c-a alone (it is its ring)", i, claims)
		}
	}
	// the views keep their nodes beside the Fleet
	if v := s.Cells[0].Views; len(v) != 1 || !slices.Equal(v[0].Managed(s.UUID), []string{"n1", "n2"}) {
		t.Errorf("views after a refresh: %+v, want c-a managing n1 and n2", v)
	}
	if claims := nova.Claims(s.Cells[0].Views, s.UUID); len(claims["n1"]) != 1 || len(claims["n2"]) != 1 {
		t.Errorf("nova.Claims of the cached views: %+v", claims)
	}
	r.err = errors.New("nova_api: connection refused")
	c.Refresh(context.Background())
	stale := c.Current()
	if stale.Err == nil || len(stale.Cells) != 1 || !stale.ReadAt.Equal(now) {
		t.Errorf("after an outage: err %v, cells %d, read at %v", stale.Err, len(stale.Cells), stale.ReadAt)
	}
	if stale.Fleet != s.Fleet || stale.Fleet.Len() != 2 {
		t.Errorf("the answer was dropped: %+v", stale.Fleet)
	}
}

// TestRefreshKeepsViewsWhileInputsHold: a refresh over the same rows,
// nodes and compute states keeps the views and Fleet and judges the
// heartbeats again; a compute going down recomputes them.
func TestRefreshKeepsViewsWhileInputsHold(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := now
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services: []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68},
			{ID: 2, Host: "c-b", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{UUID: nova.KeyOf("n1"), Host: "c-a"},
			{UUID: nova.KeyOf("n2"), Host: "c-b"}}}
	snap := &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}, {Node: &db.Node{UUID: "n2"}}, {Node: &db.Node{UUID: "n3"}}}
	c := New(Config{Reader: &fakeReader{snap: snap}, Ironic: func(context.Context) *topology.Topology { return topo },
		Settings: rules.DefaultNovaSettings(), Now: func() time.Time { return clock }})
	c.Refresh(context.Background())
	first := c.Current()

	clock = now.Add(10 * time.Second) // a heartbeat later, both still up
	snap.Cells[0].Cell.Services[0].LastSeenUp = clock
	c.Refresh(context.Background())
	kept := c.Current()
	if kept.Fleet != first.Fleet || &kept.Cells[0].Views[0] != &first.Cells[0].Views[0] {
		t.Error("unchanged inputs: the views or Fleet were computed again")
	}
	if got := kept.Cells[0].Computes[0].Heartbeat; !got.Equal(clock) {
		t.Errorf("heartbeat %v, want the new %v", got, clock)
	}

	// new rows (a new generation of compute nodes): computed again
	rows := snap.Cells[0].Cell.ComputeNodes
	snap.Cells[0].Cell.ComputeNodes = []nova.ComputeNode{{UUID: nova.KeyOf("n1"), Host: "c-b"}, {UUID: nova.KeyOf("n2"), Host: "c-b"}}
	snap.Cells[0].Generation.ComputeNodes++
	c.Refresh(context.Background())
	if reread := c.Current(); reread.Fleet == kept.Fleet {
		t.Error("a new generation of compute nodes and the Fleet was kept")
	}
	// the same generation again: kept
	again := c.Current()
	c.Refresh(context.Background())
	if c.Current().Fleet != again.Fleet {
		t.Error("the same generation and the Fleet was computed again")
	}
	snap.Cells[0].Cell.ComputeNodes = rows
	snap.Cells[0].Generation.ComputeNodes++

	clock = now.Add(5 * time.Minute) // c-b's heartbeat is stale now; c-a beats
	snap.Cells[0].Cell.Services[0].LastSeenUp = clock
	c.Refresh(context.Background())
	moved := c.Current()
	if moved.Fleet == first.Fleet {
		t.Fatal("a compute went down and the Fleet was kept")
	}
	for i := range moved.Fleet.Len() {
		if claims := slices.Collect(moved.Fleet.Claims(i)); i < 2 && (len(claims) == 0 || claims[len(claims)-1].Host != "c-a" && claims[0].Host != "c-a") {
			t.Errorf("node %d: %+v, want c-a's ring to hold it", i, claims)
		}
	}
}

// countingReader counts its reads and blocks each until release is
// closed (nil: at once).
type countingReader struct {
	fakeReader
	reads   atomic.Int32
	release chan struct{}
	known   []*novadb.Known // what each read was handed
}

func (r *countingReader) Read(ctx context.Context, hosts []string, known *novadb.Known) (*novadb.Snapshot, error) {
	r.reads.Add(1)
	r.known = append(r.known, known)
	if r.release != nil {
		<-r.release
	}
	return r.fakeReader.Read(ctx, hosts, known)
}

// settled returns the next refresh reported and waits until that refresh
// has ended: OnRefresh is called before the refresh commits, and a Get
// in between joins the refresh that runs instead of starting its own
// (a CI run hung here for 45 minutes waiting for a report that never
// came). It fails the test after a minute without a report.
func settled(t *testing.T, c *Cache, refreshes <-chan Refresh) Refresh {
	t.Helper()
	var rf Refresh
	select {
	case rf = <-refreshes:
	case <-time.After(time.Minute):
		t.Fatal("no refresh reported in a minute")
	}
	for !c.policy.Idle() {
		time.Sleep(time.Millisecond)
	}
	return rf
}

// TestGetRefreshPolicy: Get reads only when the answer is older than
// Interval, concurrent callers share one read, an answer within MaxAge is
// served at once while its refresh runs, and every refresh is reported
// with its error's kind.
func TestGetRefreshPolicy(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := now
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services:     []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{UUID: nova.KeyOf("n1"), Host: "c-a", HypervisorHostname: nova.KeyOf("n1")}}}
	r := &countingReader{fakeReader: fakeReader{snap: &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}},
		release: make(chan struct{})}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}}
	refreshes := make(chan Refresh, 10)
	c := New(Config{Reader: r, Ironic: func(context.Context) *topology.Topology { return topo }, Interval: 10 * time.Second,
		Now:       func() time.Time { mu.Lock(); defer mu.Unlock(); return clock },
		OnRefresh: func(rf Refresh) { refreshes <- rf }})

	// the first answer: every caller waits for the one read
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if s := c.Get(ctx); s.Fleet == nil || s.Fleet.Len() != 1 {
				t.Errorf("a caller got no answer: %+v", s)
			}
		}()
	}
	for r.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the others join the running read
	close(r.release)
	wg.Wait()
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("%d reads for four concurrent callers, want one shared", n)
	}
	if rf := settled(t, c, refreshes); rf.Err != nil || !rf.Started.Equal(now) {
		t.Errorf("reported %+v", rf)
	}
	first := c.Current()

	// within Interval: no read
	mu.Lock()
	clock = now.Add(9 * time.Second)
	mu.Unlock()
	if s := c.Get(context.Background()); s != first || r.reads.Load() != 1 {
		t.Errorf("a fresh answer was read again (%d reads)", r.reads.Load())
	}

	// older than Interval, within MaxAge: served at once, read behind it
	r.release = make(chan struct{})
	mu.Lock()
	clock = now.Add(10*time.Second + 500*time.Millisecond)
	mu.Unlock()
	if s := c.Get(context.Background()); s != first {
		t.Error("an answer within MaxAge was not served at once")
	}
	close(r.release)
	settled(t, c, refreshes)
	if n := r.reads.Load(); n != 2 {
		t.Errorf("%d reads, want the one Get started", n)
	}
	// the cache holds the last read and hands it back, as topology.Cache
	// hands db its nodes
	if k := r.known; k[0] != nil || k[1] == nil || k[1].Last != r.snap || k[1].Window != topology.DefaultProbeWindow {
		t.Errorf("known reads handed to the reader: %+v", k)
	}

	// a failing nova_api: reported with its error
	last := c.Current()
	r.err = errors.New("nova_api: connection refused")
	mu.Lock()
	clock = now.Add(time.Minute)
	mu.Unlock()
	if s := c.Get(context.Background()); s.Err == nil || s.Fleet != last.Fleet {
		t.Errorf("after an outage: err %v; the last answer kept: %t", s.Err, s.Fleet == last.Fleet)
	}
	if rf := settled(t, c, refreshes); rf.Err == nil {
		t.Error("a failed read reported no error")
	}
}
