package db

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
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

// pgBinaryTime scans a timestamp sent by PostgreSQL's timestamp_send as
// bytea: microseconds since 2000-01-01 00:00:00, big-endian, the wall clock
// as stored (naive UTC). +-infinity, which no time.Time holds, read as
// NULL with Bad set, as dbconn.Time reads their text.
type pgBinaryTime dbconn.Time

// pgEpoch is PostgreSQL's timestamp epoch, 2000-01-01, in Unix seconds.
const pgEpoch = 946684800

func (d *pgBinaryTime) Scan(v any) error {
	*d = pgBinaryTime{}
	b, ok := v.([]byte)
	switch {
	case v == nil:
		return nil
	case !ok:
		d.Bad = fmt.Sprintf("(a %T)", v)
		return nil
	case len(b) != 8:
		d.Bad = fmt.Sprintf("(%d bytes, not timestamp_send's 8)", len(b))
		return nil
	}
	switch us := int64(binary.BigEndian.Uint64(b)); us {
	case math.MaxInt64:
		d.Bad = strconv.Quote("infinity")
	case math.MinInt64:
		d.Bad = strconv.Quote("-infinity")
	default:
		d.T = time.Unix(pgEpoch+us/1e6, us%1e6*1e3).UTC() // time.Unix normalises a negative remainder
	}
	return nil
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
