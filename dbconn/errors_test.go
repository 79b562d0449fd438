package dbconn

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"
)

// TestNoSuchRelationAndErrorKind: a missing table or column, on each
// server, is the one "not the expected schema" error (NoSuchRelation) and
// of kind schema; an unknown database is of kind schema too but not a
// missing relation; other errors are neither.
func TestNoSuchRelationAndErrorKind(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("reading nodes: %w", err) }
	for _, tc := range []struct {
		err      error
		relation bool
		kind     string
	}{
		{wrap(&pq.Error{Code: "42P01"}), true, KindSchema},
		{wrap(&pq.Error{Code: "42703"}), true, KindSchema},
		{wrap(&pq.Error{Code: "3D000"}), false, KindSchema},
		{wrap(&pq.Error{Code: "28P01"}), false, KindAuth},
		{wrap(&mysql.MySQLError{Number: 1146}), true, KindSchema},
		{wrap(&mysql.MySQLError{Number: 1054}), true, KindSchema},
		{wrap(&mysql.MySQLError{Number: 1049}), false, KindSchema},
		{wrap(errors.New("SQL logic error: no such table: nodes (1)")), true, KindSchema},
		{wrap(errors.New("SQL logic error: no such column: shard (1)")), true, KindSchema},
		{wrap(context.DeadlineExceeded), false, KindTimeout},
		{nil, false, ""},
	} {
		if got := NoSuchRelation(tc.err); got != tc.relation {
			t.Errorf("NoSuchRelation(%v) = %t", tc.err, got)
		}
		if got := ErrorKind(tc.err); got != tc.kind {
			t.Errorf("ErrorKind(%v) = %q, want %q", tc.err, got, tc.kind)
		}
	}
}
