package dbconn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSQLiteDSN(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dsn, path string
		ignored   []string
	}{
		{"sqlite:////var/lib/ironic/ironic.sqlite", "/var/lib/ironic/ironic.sqlite", nil},
		{"sqlite:///ironic.sqlite", filepath.Join(wd, "ironic.sqlite"), nil},
		{"sqlite:///../state/ironic.db?timeout=30&check_same_thread=false", filepath.Join(wd, "../state/ironic.db"), []string{"timeout", "check_same_thread"}},
		{"sqlite:////tmp/a%20b/ironic.sqlite", "/tmp/a b/ironic.sqlite", nil},
		{"SQLite+pysqlite:////x.db", "/x.db", nil},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			d, err := parseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			s := d.(*sqliteDialect)
			if s.path != tc.path {
				t.Errorf("path %q, want %q", s.path, tc.path)
			}
			if diff := cmp.Diff(tc.ignored, s.dropped); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			dsn := s.dsn(Options{QueryTimeout: 2 * time.Second})
			for _, want := range []string{"mode=ro", "busy_timeout%282000%29", "query_only%281%29"} {
				if !strings.Contains(dsn, want) {
					t.Errorf("driver DSN %q lacks %q", dsn, want)
				}
			}
		})
	}
	for _, tc := range []struct{ dsn, want string }{
		{"sqlite://", "must name the database file"},
		{"sqlite:///:memory:", "in-memory"},
		{"sqlite://host/x.db", "not a host"},
		{"sqlite:///x.db?uri=true", `"uri" is not supported`},
		{"sqlite:///x.db?foo=1", `unknown database option "foo"`},
	} {
		if _, err := Open(tc.dsn, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", tc.dsn, err, tc.want)
		}
	}
}

// TestSQLiteReadOnly: a write inside the snapshot fails, and snapshots
// neither change the file nor leave a journal behind, in rollback-journal
// and WAL mode (no other process has the WAL database open: SQLite then
// needs to make the -shm index, which a read-only connection may do).
