package dbconn

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Time scans a timestamp column holding naive UTC, as OpenStack services
// write them (oslo.db's TimestampMixin): a time from the driver
// (PostgreSQL, MySQL) whose wall clock is taken as UTC, or SQLAlchemy's
// text form (SQLite, or a column read as text). A value that is neither
// reads as NULL with Bad describing it, so that one odd row does not fail
// a read.
type Time struct {
	T   time.Time // zero when NULL or bad
	Bad string    // the unreadable value, quoted; "" when fine
}

// Scan implements sql.Scanner.
func (d *Time) Scan(v any) error {
	*d = Time{}
	switch x := v.(type) {
	case nil:
	case time.Time:
		d.T = WallUTC(x)
	case string:
		d.text(x)
	case []byte:
		d.text(string(x))
	case int64:
		d.Bad = fmt.Sprintf("%d (an integer)", x)
	case float64:
		d.Bad = fmt.Sprintf("%g (a number)", x)
	default:
		d.Bad = fmt.Sprintf("(a %T)", v)
	}
	return nil
}

func (d *Time) text(s string) {
	t, err := ParseSQLAlchemyTime(s)
	if err != nil {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		d.Bad = strconv.Quote(s)
		return
	}
	d.T = t
}

// Describe is the value for a message: Bad, "NULL" or the time.
func (d *Time) Describe() string {
	if d.Bad != "" {
		return d.Bad
	}
	if d.T.IsZero() {
		return "NULL"
	}
	return d.T.Format("2006-01-02 15:04:05.999999")
}

// ParseSQLAlchemyTime reads a DATETIME the way SQLAlchemy's SQLite dialect
// does (processors.str_to_datetime, regexp
// `(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)(?:\.(\d+))?`): SQLAlchemy writes
// "YYYY-MM-DD HH:MM:SS.ffffff" (always six digits), and reads the digits
// after the dot as a number of microseconds, so ".5" is 5µs, not half a
// second. The layout must be exactly that (SQLite's own CURRENT_TIMESTAMP
// "YYYY-MM-DD HH:MM:SS" included); anything else is an error, where
// SQLAlchemy would raise or misread.
func ParseSQLAlchemyTime(s string) (time.Time, error) {
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

// WallUTC returns the stored wall-clock time in time.UTC. OpenStack stores
// naive UTC; drivers tag such values with a zone of their own (lib/pq: a
// nameless fixed zone; MySQL: the loc parameter), which must not shift them.
func WallUTC(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}
