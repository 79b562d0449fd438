package db

import (
	"math"
	"testing"
	"time"
)

func TestStamp(t *testing.T) {
	for _, tm := range []time.Time{
		{},
		time.Date(2024, 2, 29, 23, 59, 59, 999999000, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), // not NULL
		time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(292000, 6, 1, 0, 0, 0, 5000, time.UTC),  // far, but fits
		time.Date(-290000, 6, 1, 0, 0, 0, 5000, time.UTC), // far, but fits
	} {
		s := StampOf(tm)
		if got := s.Time(); got != tm {
			t.Errorf("StampOf(%v).Time() = %v", tm, got)
		}
		if s.IsZero() != tm.IsZero() {
			t.Errorf("StampOf(%v).IsZero() = %v", tm, s.IsZero())
		}
	}
	// Nanoseconds are truncated, as SQLAlchemy reads six digits.
	if got := StampOf(time.Date(2024, 1, 1, 0, 0, 0, 1999, time.UTC)).Time(); got.Nanosecond() != 1000 {
		t.Errorf("1999 ns read as %d ns", got.Nanosecond())
	}
	// Beyond the range: saturated, in order.
	last := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := StampOf(last)
	for _, y := range []int{290000, 292277, 292278, 294276, 1 << 37} {
		s := StampOf(time.Date(y, 12, 31, 23, 59, 59, 999999000, time.UTC))
		if s < prev {
			t.Errorf("year %d: stamp %d before the previous %d", y, s, prev)
		}
		prev = s
	}
	if prev != math.MaxInt64 {
		t.Errorf("a far future stamps %d, not saturated", prev)
	}
	if s := StampOf(time.Date(-1<<37, 1, 1, 0, 0, 0, 0, time.UTC)); s != math.MinInt64 {
		t.Errorf("a far past stamps %d, not saturated", s)
	}
	if s := StampOf(time.Date(-290000, 1, 1, 0, 0, 0, 0, time.UTC)); s >= StampOf(time.Date(-43, 1, 1, 0, 0, 0, 0, time.UTC)) || s == math.MinInt64 {
		t.Errorf("year -290000 stamps %d", s)
	}
}
