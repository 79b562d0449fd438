package topology

import (
	"context"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
)

// TestMemoryLimit: what the process holds plus headroom of its live heap,
// the live heap the less of the last two collections' (one may count a
// replaced topology a reader still held), and minHeadroom at least; never
// less than what it holds.
func TestMemoryLimit(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, held, last uint64
		want             int64
	}{
		{live: 400 * mb, held: 430 * mb, last: 0, want: 430*mb + 140*mb},
		{live: 400 * mb, held: 430 * mb, last: 380 * mb, want: 430*mb + 133*mb},
		{live: 400 * mb, held: 430 * mb, last: 600 * mb, want: 430*mb + 140*mb},
		{live: 10 * mb, held: 20 * mb, last: 10 * mb, want: 20*mb + minHeadroom},
	} {
		if got := memoryLimit(c.live, c.held, c.last); got != c.want {
			t.Errorf("memoryLimit(%d, %d, %d) MiB = %d MiB, want %d", c.live/mb, c.held/mb, c.last/mb, got/mb, c.want/mb)
		}
	}
}

// TestCacheCollectsReplacedNodesOnly: a refresh whose read returned the
// very nodes of the one before forces no collection (settleMemory); one
// that replaced them does, once.
func TestCacheCollectsReplacedNodesOnly(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// settleMemory runs on the refresh's goroutine after Get has returned.
	waitForced := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); forced() < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := forced(); got < want {
			t.Fatalf("%d forced collections, want %d", got, want)
		}
	}
	src := &probingSource{snap: fixture.Golden()}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	start := forced()
	cache.Get(context.Background()) // the first nodes: collected
	waitForced(start + 1)
	cache.Get(context.Background()) // the very same slice: not collected
	src.mu.Lock()
	replaced := *src.snap
	replaced.Nodes = slices.Clone(replaced.Nodes)
	src.snap = &replaced
	src.mu.Unlock()
	cache.Get(context.Background()) // nodes replaced: collected
	waitForced(start + 2)
	time.Sleep(100 * time.Millisecond)
	if got := forced() - start; got != 2 || src.nodeReads != 3 {
		t.Errorf("%d forced collections over 3 node reads (%d), want 2: a read of the same nodes was collected", got, src.nodeReads)
	}
}
