package db

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// anyBool scans a boolean column: a boolean (PostgreSQL), or an integer
// (MySQL TINYINT(1), SQLite INTEGER) where any non-zero value is true, as
// SQLAlchemy's Boolean and MySQL's "IS TRUE" read it. NULL is false, as in
// Ironic's online.is_(True) filter.
type anyBool bool

func (b *anyBool) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*b = false
	case bool:
		*b = anyBool(x)
	case int64:
		*b = x != 0
	case []byte:
		return b.text(string(x))
	case string:
		return b.text(x)
	default:
		return fmt.Errorf("boolean column holds a %T", v)
	}
	return nil
}

func (b *anyBool) text(s string) error {
	switch s {
	case "t", "true", "TRUE", "1":
		*b = true
	case "f", "false", "FALSE", "0", "":
		*b = false
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("boolean column holds %q", s)
		}
		*b = n != 0
	}
	return nil
}

// dbTime scans a timestamp column holding naive UTC: a time from the driver
// (PostgreSQL, MySQL) whose wall clock is taken as UTC, or SQLAlchemy's text
// form (SQLite). A value that is neither reads as NULL with bad describing
// it, so that one odd row does not fail the snapshot.
type dbTime struct {
	t   time.Time // zero when NULL or bad
	bad string    // the unreadable value, quoted; "" when fine
}

func (d *dbTime) Scan(v any) error {
	*d = dbTime{}
	switch x := v.(type) {
	case nil:
	case time.Time:
		d.t = wallUTC(x)
	case string:
		d.text(x)
	case []byte:
		d.text(string(x))
	case int64:
		d.bad = fmt.Sprintf("%d (an integer)", x)
	case float64:
		d.bad = fmt.Sprintf("%g (a number)", x)
	default:
		d.bad = fmt.Sprintf("(a %T)", v)
	}
	return nil
}

// pgBinaryTime scans a timestamp sent by PostgreSQL's timestamp_send as
// bytea: microseconds since 2000-01-01 00:00:00, big-endian, the wall clock
// as stored (naive UTC). +-infinity, which no time.Time holds, read as
// NULL with bad set, as dbTime reads their text.
type pgBinaryTime dbTime

// pgEpoch is PostgreSQL's timestamp epoch, 2000-01-01, in Unix seconds.
const pgEpoch = 946684800

func (d *pgBinaryTime) Scan(v any) error {
	*d = pgBinaryTime{}
	b, ok := v.([]byte)
	switch {
	case v == nil:
		return nil
	case !ok:
		d.bad = fmt.Sprintf("(a %T)", v)
		return nil
	case len(b) != 8:
		d.bad = fmt.Sprintf("(%d bytes, not timestamp_send's 8)", len(b))
		return nil
	}
	switch us := int64(binary.BigEndian.Uint64(b)); us {
	case math.MaxInt64:
		d.bad = strconv.Quote("infinity")
	case math.MinInt64:
		d.bad = strconv.Quote("-infinity")
	default:
		d.t = time.Unix(pgEpoch+us/1e6, us%1e6*1e3).UTC() // time.Unix normalises a negative remainder
	}
	return nil
}

func (d *dbTime) text(s string) {
	t, err := parseSQLAlchemyTime(s)
	if err != nil {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		d.bad = strconv.Quote(s)
		return
	}
	d.t = t
}

func (d *dbTime) describe() string {
	if d.bad != "" {
		return d.bad
	}
	if d.t.IsZero() {
		return "NULL"
	}
	return d.t.Format("2006-01-02 15:04:05.999999")
}

// parseSQLAlchemyTime reads a DATETIME the way SQLAlchemy's SQLite dialect
// does (processors.str_to_datetime, regexp
// `(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)(?:\.(\d+))?`): SQLAlchemy writes
// "YYYY-MM-DD HH:MM:SS.ffffff" (always six digits), and reads the digits
// after the dot as a number of microseconds, so ".5" is 5µs, not half a
// second. The layout must be exactly that (SQLite's own CURRENT_TIMESTAMP
// "YYYY-MM-DD HH:MM:SS" included); anything else is an error, where
// SQLAlchemy would raise or misread.
func parseSQLAlchemyTime(s string) (time.Time, error) {
	date, micro, hasMicro := strings.Cut(s, ".")
	t, err := time.Parse(time.DateTime, date) // refuses Feb 30 and the like, as Python's datetime does
	var us uint64
	if err == nil && hasMicro {
		us, err = strconv.ParseUint(micro, 10, 32) // digits only
	}
	if err != nil || len(date) != len(time.DateTime) || len(micro) > 6 || t.Year() < 1 {
		return time.Time{}, fmt.Errorf("not a SQLAlchemy DATETIME: %q", s)
	}
	return t.Add(time.Duration(us) * time.Microsecond), nil
}

// wallUTC returns the stored wall-clock time in time.UTC. Ironic stores naive
// UTC; drivers tag such values with a zone of their own (lib/pq: a nameless
// fixed zone; MySQL: the loc parameter), which must not shift them.
func wallUTC(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// interner shares one string, and one *string, per distinct value of the
// low-cardinality columns (driver, group, states, resource class,
// reservation, owner, lessee) across the nodes of one snapshot, which the
// collector keeps: without it the seven nullable ones alone would cost
// about 200 B a node of the 600 B/node live heap target. The snapshot is
// read-only, so nodes may share the pointer.
type interner map[string]*string

// ptr returns the shared *string of a column's bytes, nil for NULL; the
// lookup converts nothing.
func (in interner) ptr(b sql.RawBytes) *string {
	if b == nil {
		return nil
	}
	if v, ok := in[string(b)]; ok {
		return v
	}
	s := string(b)
	in[s] = &s
	return &s
}

// keep is ptr, but old when it has b's text.
func (in interner) keep(b sql.RawBytes, old *string) *string {
	if b != nil && old != nil && *old == string(b) {
		return old
	}
	return in.ptr(b)
}

// str is ptr for a column read as "" when NULL.
func (in interner) str(b []byte) string {
	if p := in.ptr(b); p != nil {
		return *p
	}
	return ""
}

// ptrOf returns a *string of b's text, nil for NULL: old when it has that
// text.
func ptrOf(b sql.RawBytes, old *string) *string {
	if b == nil {
		return nil
	}
	if old != nil && *old == string(b) {
		return old
	}
	s := string(b)
	return &s
}
