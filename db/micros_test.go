package db

import (
	"testing"
	"time"
)

func TestMicros(t *testing.T) {
	// Nanoseconds are truncated, as SQLAlchemy reads six digits; NULL stays zero.
	if got := micros(time.Date(2024, 1, 1, 0, 0, 0, 1999, time.UTC)); got.Nanosecond() != 1000 {
		t.Errorf("1999 ns read as %d ns", got.Nanosecond())
	}
	if !micros(time.Time{}).IsZero() {
		t.Error("NULL not zero")
	}
	if got := micros(time.Date(2024, 1, 1, 2, 0, 0, 0, time.FixedZone("x", 3600))); got.Location() != time.UTC || got.Hour() != 1 {
		t.Errorf("not in UTC: %v", got)
	}
}
