package dbconn

import (
	"database/sql"
	"strconv"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Interner shares one string, and one *string, per distinct value of a
// column across the rows of one read: for the low-cardinality columns a
// reader keeps (Ironic's driver, group, states, resource class,
// reservation, owner, lessee; Nova's hosts), so that rows kept between
// reads hold one copy of each value (the memory row of
// docs/performance.md). The rows are read-only, so they may share the
// pointer.
type Interner map[string]*string

// Ptr returns the shared *string of a column's bytes, nil for NULL; the
// lookup converts nothing.
func (in Interner) Ptr(b sql.RawBytes) *string {
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

// Keep is Ptr, but old when it has b's text.
func (in Interner) Keep(b sql.RawBytes, old *string) *string {
	if b != nil && old != nil && *old == string(b) {
		return old
	}
	return in.Ptr(b)
}

// Str is Ptr for a column read as "" when NULL.
func (in Interner) Str(b []byte) string {
	if p := in.Ptr(b); p != nil {
		return *p
	}
	return ""
}

// Param is the n-th (from 1) parameter marker of b's driver: lib/pq
// numbers them ($1), go-sql-driver/mysql and modernc.org/sqlite take
// question marks.
func Param(b rules.Backend, n int) string {
	if b == rules.PostgreSQL {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}
