package topology

import (
	"context"
	"sync"
	"testing"
	"time"

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
	if v := cache.Get(ctx); v.Topology != nil || v.Err != ErrNoData {
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
