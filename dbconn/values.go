package dbconn

import (
	"fmt"
	"math"
	"strconv"
)

// Bool scans a boolean column: a boolean (PostgreSQL), or an integer
// (MySQL TINYINT(1), SQLite INTEGER) where any non-zero value is true, as
// SQLAlchemy's Boolean and MySQL's "IS TRUE" read it. NULL is false, as in
// Ironic's online.is_(True) filter. Anything else (SQLite keeps any value
// in any column: 'maybe', 'yes', 0.5) reads as false with Bad set, a
// warning about its row, never a failed read: Ironic's own
// online.is_(True) (SQLite "online IS 1") leaves such a conductor out of
// its rings.
type Bool struct {
	V bool
	// Valid: a boolean was read (neither NULL nor Bad).
	Valid bool
	// Bad is the value, quoted, when it is no boolean.
	Bad string
}

// Scan implements sql.Scanner.
func (b *Bool) Scan(v any) error {
	*b = Bool{}
	switch x := v.(type) {
	case nil:
	case bool:
		b.V = x
	case int64:
		b.V = x != 0
	case float64:
		if x != 0 && x != 1 {
			b.Bad = strconv.FormatFloat(x, 'g', -1, 64)
		}
		b.V = x == 1
	case []byte:
		b.text(string(x))
	case string:
		b.text(x)
	default:
		b.Bad = fmt.Sprintf("(a %T)", v)
	}
	b.Valid = v != nil && b.Bad == ""
	return nil
}

func (b *Bool) text(s string) {
	switch s {
	case "t", "true", "TRUE", "1":
		b.V = true
	case "f", "false", "FALSE", "0", "":
		b.V = false
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Bad = quoteBad(s)
			return
		}
		b.V = n != 0
	}
}

// Int scans an integer column as sql.NullInt64 does, but a value that is
// no integer (SQLite keeps 'abc' or 1e20 in an INTEGER column) reads as
// NULL with Bad set, a warning about its row, never a failed read.
type Int struct {
	Int64 int64
	Valid bool
	// Bad is the value, quoted, when it is no 64-bit integer.
	Bad string
}

// Scan implements sql.Scanner.
func (n *Int) Scan(v any) error {
	*n = Int{}
	switch x := v.(type) {
	case nil:
	case int64:
		n.Int64, n.Valid = x, true
	case float64:
		if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
			n.Int64, n.Valid = int64(x), true
		} else {
			n.Bad = strconv.FormatFloat(x, 'g', -1, 64)
		}
	case []byte:
		n.text(string(x))
	case string:
		n.text(x)
	default:
		n.Bad = fmt.Sprintf("(a %T)", v)
	}
	return nil
}

func (n *Int) text(s string) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		n.Bad = quoteBad(s)
		return
	}
	n.Int64, n.Valid = i, true
}

// quoteBad quotes an odd value for a warning, cut to 40 bytes.
func quoteBad(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}
