package testenv

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// ExecSQLite runs stmts, in order, on the SQLite file at path (created when
// missing), failing t on the first error.
func ExecSQLite(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
