package topology

import (
	"errors"
	"strings"
)

// Permanent reports whether a refresh error will not go away by retrying:
// the database is reachable but is not Ironic's (a table or column the
// exporter reads does not exist), as opposed to a transient failure (the
// server unreachable, a timeout, a lock). It reads the error text the
// three drivers produce: lib/pq's SQLSTATE suffix 42P01/42703 (undefined
// table or column), MySQL's errors 1146/1054 and SQLite's "no such
// table"/"no such column".
func Permanent(err error) bool {
	if err == nil || errors.Is(err, ErrNoData) {
		return false
	}
	s := err.Error()
	for _, m := range []string{"(42P01)", "(42703)", "Error 1146", "Error 1054", "no such table", "no such column"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
