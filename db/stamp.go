package db

import (
	"math"
	"time"
)

// Stamp is a node's created_at or updated_at in 8 bytes: microseconds since
// the zero time.Time (0001-01-01 00:00:00 UTC), so that the zero Stamp is
// NULL as the zero time.Time is. A microsecond is all any backend stores
// (PostgreSQL's timestamp, MySQL's DATETIME(6), SQLAlchemy's six digits on
// SQLite) and all Python's datetime, so Ironic, holds. Two Stamps in a Node,
// not two time.Time of 24 bytes: the Node in 184 bytes (size class 192),
// not 216 (224): 32 bytes a node of the memory row with the Nova side
// configured in docs/performance.md's contract (live heap <= 800 B/node at
// 100k nodes), which fails with two time.Time. Conductors, a few hundred
// rows, keep time.Time.
type Stamp int64

// zeroMicros is the zero time.Time in Unix microseconds.
const zeroMicros = -62135596800 * 1_000_000

// StampOf returns t as a Stamp, truncated to the microsecond (as SQLAlchemy
// reads more digits). A time beyond about 292,000 years of year 1, which
// only PostgreSQL stores (up to 294276 AD) and no Ironic reads (Python's
// datetime ends at 9999), saturates, so that the order of Stamps is still
// the order of the times.
func StampOf(t time.Time) Stamp {
	// The seconds from which a Stamp would overflow, and below which
	// UnixMicro would.
	const maxSec, minSec = (math.MaxInt64 + zeroMicros) / 1_000_000, math.MinInt64 / 1_000_000
	switch sec := t.Unix(); {
	case sec >= maxSec:
		return math.MaxInt64
	case sec < minSec:
		return math.MinInt64
	}
	return Stamp(t.UnixMicro() - zeroMicros)
}

// Time returns s as a time.Time in UTC: the zero time for the zero Stamp.
func (s Stamp) Time() time.Time {
	return time.UnixMicro(int64(s) + zeroMicros).UTC()
}

// IsZero reports whether s is NULL.
func (s Stamp) IsZero() bool { return s == 0 }
