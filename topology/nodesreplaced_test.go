package topology

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
)

// TestCacheNodesReplacedOnly: a refresh whose read returned the very nodes
// of the one before does not call NodesReplaced (the binary's forced
// collection, internal/memlimit); one that replaced them does, once.
func TestCacheNodesReplacedOnly(t *testing.T) {
	calls := make(chan bool, 8)
	src := &probingSource{snap: fixture.Golden()}
	cache, err := NewCache(CacheConfig{Source: src, Settings: testSettings, Now: func() time.Time { return testNow },
		NodesReplaced: func(idle func() bool) { calls <- idle() }})
	if err != nil {
		t.Fatal(err)
	}
	// NodesReplaced runs on the refresh's goroutine after Get has returned.
	wait := func(what string) {
		t.Helper()
		select {
		case idle := <-calls:
			if !idle {
				t.Errorf("%s: idle() false with no refresh running", what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: NodesReplaced not called", what)
		}
	}
	cache.Get(context.Background()) // the first nodes: replaced
	wait("first read")
	cache.Get(context.Background()) // the very same slice: not replaced
	src.mu.Lock()
	replaced := *src.snap
	replaced.Nodes = slices.Clone(replaced.Nodes)
	src.snap = &replaced
	src.mu.Unlock()
	cache.Get(context.Background()) // nodes replaced
	wait("replaced nodes")
	time.Sleep(100 * time.Millisecond)
	if n := len(calls); n != 0 || src.nodeReads != 3 {
		t.Errorf("%d more calls over 3 node reads (%d), want none: a read of the same nodes counted as replaced", n, src.nodeReads)
	}
}
