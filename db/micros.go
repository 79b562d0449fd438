package db

import "time"

// micros returns t in UTC truncated to the microsecond, as SQLAlchemy reads
// a timestamp with more digits: a microsecond is all any backend stores and
// all Python's datetime, so Ironic, holds.
func micros(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
