package memlimit

import (
	"testing"
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
