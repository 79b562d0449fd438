package topology

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// refreshHeadroom is how much of the live heap a refresh may allocate above
// what the process holds when it starts, before the garbage collector works
// to stay under it: a refresh that reads or merges the nodes makes a new
// node slice (192 B a node) and builds a topology beside the one it
// replaces (about 60 B a node), together about 0.7 of the live heap (370 B
// a node). At 1M nodes peak RSS is then 1.93x the live heap in make bench,
// and every 0.05 more of headroom about 0.05x more.
const refreshHeadroom = 0.8

// minHeadroom is the least headroom of the memory limit (memoryLimit).
const minHeadroom = 64 << 20

// settledLive is the live heap the last settleMemory found.
var settledLive atomic.Uint64

// settleMemory runs after a refresh that read nodes, once the cache no
// longer holds the nodes and topology it replaced: it collects them, and
// sets the process's soft memory limit (debug.SetMemoryLimit) to what it
// then holds plus refreshHeadroom of its live heap. That keeps peak RSS, a
// refresh included, within twice the live heap (the performance contract),
// where the default pacing lets the heap grow to twice what a collection
// during a refresh marked live (3-4 times the live heap). The collection
// it starts takes the place of the one the refresh's garbage would start.
// The limit is left as it was when a refresh started meanwhile (idle false
// after the collection: its nodes were counted live), and when the
// operator set GOMEMLIMIT.
func settleMemory(idle func() bool) {
	runtime.GC()
	if os.Getenv("GOMEMLIMIT") != "" || !idle() {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	held := s[1].Value.Uint64() - s[2].Value.Uint64() - s[3].Value.Uint64() // the heap's spans, the runtime's own memory
	debug.SetMemoryLimit(memoryLimit(live, held, settledLive.Swap(live)))
}

// memoryLimit is the soft memory limit for a process holding held bytes,
// live of them the heap a collection marked, the last collection of
// settleMemory having marked last (0: none). A reader still holding the
// topology replaced (a scrape rendering it) makes one collection find more
// live: the less of the last two counts.
func memoryLimit(live, held, last uint64) int64 {
	if last != 0 && last < live {
		held, live = held-(live-last), last
	}
	// At least 64 MiB: the runtime counts freed pages not yet returned to
	// the OS against the limit, so that a tighter one made the collector
	// run without pause during a full read at 100k nodes (15 collections
	// in half a second; the sidecar's CPU 2.6% of a core in make bench's
	// unchanged phase, where it was 1.2-1.4%).
	return int64(held) + max(int64(refreshHeadroom*float64(live)), minHeadroom)
}
