package topology

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// historySource is a Source with node_history: the events appended so far
// (ids from 1), read after a cursor as db.DB.History does.
type historySource struct {
	*fixture.Source
	mu      sync.Mutex
	events  []db.HistoryEvent
	absent  bool
	err     error
	afters  []int64
	backlog int
}

func (h *historySource) History(_ context.Context, after int64, backlog int) (db.HistoryRead, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.afters, h.backlog = append(h.afters, after), backlog
	if h.err != nil {
		return db.HistoryRead{}, h.err
	}
	if h.absent {
		return db.HistoryRead{}, nil
	}
	if after <= 0 {
		after = max(int64(len(h.events)-backlog), 0)
	}
	return db.HistoryRead{Present: true, Events: append([]db.HistoryEvent(nil), h.events[after:]...)}, nil
}

func (h *historySource) add(conductor, severity string, node int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, db.HistoryEvent{ID: int64(len(h.events) + 1), NodeID: node, Conductor: conductor,
		Severity: severity, EventType: "provisioning", CreatedAt: at})
}

// TestCacheHistoryWindow: the cache reads node_history after each
// snapshot from where it stopped, keeps the events of the window, counts
// errors by conductor, and keeps the last window when a read fails.
func TestCacheHistoryWindow(t *testing.T) {
	src := &historySource{Source: fixture.NewSource(fixture.Golden())}
	now := testNow
	src.add("c1", rules.HistorySeverityError, 1, now.Add(-2*time.Hour)) // before the window
	src.add("c1", rules.HistorySeverityError, 1, now.Add(-30*time.Minute))
	src.add("c2", "INFO", 2, now.Add(-20*time.Minute))
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, HistoryWindow: time.Hour,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	h := cache.Get(context.Background()).Topology.History
	if h == nil || len(h.Events) != 2 || h.Cursor != 3 || src.afters[0] != 0 || src.backlog != HistoryBacklog {
		t.Fatalf("first read: %+v (afters %v)", h, src.afters)
	}
	if got := h.ErrorsByConductor(); got["c1"].N != 1 || got["c2"].N != 0 {
		t.Errorf("errors by conductor %v", got)
	}

	now = now.Add(40 * time.Minute) // the c1 error of -30m leaves the window
	src.add("c2", rules.HistorySeverityError, 2, now.Add(-time.Minute))
	src.add("c2", rules.HistorySeverityError, 1, now)
	h = cache.Get(context.Background()).Topology.History
	if src.afters[1] != 3 || h.Cursor != 5 || len(h.Events) != 3 {
		t.Fatalf("second read: %+v (afters %v)", h, src.afters)
	}
	if got := h.ErrorsByConductor(); got["c1"].N != 0 || got["c2"].N != 2 || !got["c2"].Latest.Equal(now) {
		t.Errorf("errors by conductor %v", got)
	}
	if got := h.ForNode(1, 5); len(got) != 1 || got[0].ID != 5 {
		t.Errorf("node 1's events %+v", got)
	}
	if got := h.ForNode(2, 1); len(got) != 1 || got[0].ID != 4 {
		t.Errorf("node 2's last event %+v", got)
	}

	// A failed read shows the last window with a warning, and the next
	// read continues from the same cursor.
	src.err = errors.New("connection reset")
	now = now.Add(time.Second)
	h = cache.Get(context.Background()).Topology.History
	if h == nil || len(h.Events) != 3 || h.Warning == "" {
		t.Fatalf("failed read: %+v", h)
	}
	src.err = nil
	now = now.Add(time.Second)
	cache.Get(context.Background())
	if last := src.afters[len(src.afters)-1]; last != 5 {
		t.Errorf("read after a failure from %d, want 5", last)
	}

	// No table (before 18.2): no history.
	src.absent = true
	now = now.Add(time.Second)
	if h := cache.Get(context.Background()).Topology.History; h != nil {
		t.Errorf("no node_history, history %+v", h)
	}
}

// Without a window, or with a Source that has no history, nothing is read.
func TestCacheHistoryOff(t *testing.T) {
	src := &historySource{Source: fixture.NewSource(fixture.Golden())}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if h := cache.Get(context.Background()).Topology.History; h != nil || len(src.afters) != 0 {
		t.Errorf("history read with no window: %+v, %v", h, src.afters)
	}
}
