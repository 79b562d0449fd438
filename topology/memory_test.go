package topology

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestSettleMemory: after a refresh that read nodes, the soft memory limit
// is what the process holds plus headroom; left alone when a refresh runs.
func TestSettleMemory(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64); settledLive.Store(0) })
	debug.SetMemoryLimit(math.MaxInt64)
	settleMemory(func() bool { return false })
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("limit %d set while a refresh ran", got)
	}
	settleMemory(func() bool { return true })
	got, live := debug.SetMemoryLimit(-1), int64(settledLive.Load())
	if got == math.MaxInt64 || live == 0 || got < live+16<<20 || got > 4*live+64<<20 {
		t.Fatalf("limit %d for a live heap of %d", got, live)
	}
}
