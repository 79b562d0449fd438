// Package memlimit is the binary's memory policy, which the caches call
// through topology.CacheConfig.NodesReplaced and novacache.Config.AnswerReplaced:
// peak RSS, a refresh included, within twice the live heap (the
// peak RSS row of docs/performance.md, which fails without it at 100k nodes:
// BenchmarkPeakRSS in package collector). Nothing else in the process sets
// the memory limit.
package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// refreshHeadroom is how much of the live heap a refresh may allocate above
// what the process holds when it starts, before the garbage collector works
// to stay under it: room for the topology a refresh builds beside the one it
// replaces (it shares every node that did not change) and for the scrapes
// in between: the peak RSS row of docs/performance.md.
const refreshHeadroom = 0.35

// minHeadroom is the least headroom of the memory limit (memoryLimit): on a
// small fleet it is the headroom, and peak RSS (the binary's own
// file-backed pages included) must stay within twice the live heap at 100k
// nodes (the peak-RSS row of docs/performance.md): each MiB more of it
// raises that ratio, each MiB less makes the collector run more often.
const minHeadroom = 14 << 20

// settledLive is the live heap the last Settle found.
var settledLive atomic.Uint64

// Settle runs after a refresh whose read changed the nodes (or a new Nova
// answer), once the cache no longer holds what it replaced: it collects it,
// and sets the soft memory limit (debug.SetMemoryLimit) to what the process then
// holds plus refreshHeadroom of its live heap, where the default pacing lets
// the heap grow to twice what a collection during a refresh marked live (3-4
// times the live heap). Its collection takes the place of the one the
// refresh's garbage would start; after a read that found every node as it
// was (the very slice again) it would only cost CPU, so the cache does not
// call Settle then. When a refresh started meanwhile (idle false after the
// collection: its nodes were counted live), the limit is only raised, if the
// process holds more than it allows; it is left alone when the operator set
// GOMEMLIMIT.
func Settle(idle func() bool) {
	runtime.GC()
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	held := s[1].Value.Uint64() - s[2].Value.Uint64() - s[3].Value.Uint64() // the heap's spans, the runtime's own memory
	if idle() {
		debug.SetMemoryLimit(memoryLimit(live, held, settledLive.Swap(live)))
	} else if limit := memoryLimit(live, held, settledLive.Load()); limit > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(limit)
	}
}

// memoryLimit is the soft memory limit for a process holding held bytes,
// live of them the heap a collection marked, Settle's last collection having
// marked last (0: none). A reader still holding the topology replaced (a
// scrape rendering it) makes one collection find more live: the headroom is
// of the less of the two. The limit is never below what the process holds
// plus that headroom: under the live heap, the collector runs without pause
// on a core (its CPU limiter's 50% of GOMAXPROCS) until a limit is raised.
func memoryLimit(live, held, last uint64) int64 {
	if last != 0 && last < live {
		live = last
	}
	return int64(held) + max(int64(refreshHeadroom*float64(live)), minHeadroom)
}
