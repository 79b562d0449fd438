package novaconformance

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
)

// TestReadOnlyGrantsNovaSchema runs deploy/sql's script (novadb.GrantSQL)
// on the schema Nova's own nova-manage makes (reference.py: api_db sync,
// map_cell0, create_cell of cell1 by URL and cell2 by template, db sync),
// then the reader as that user, nova_api by DSN and the cells by
// --nova.cell-dsn-template while cell_mappings holds the administrator's
// URLs: both cells read, as that user. novadb's TestReadOnlyGrants shows
// on a schema of its own that each grant is needed. The databases are the
// conformance's own (ice_nova_<suite>_*): nova-manage makes them once for
// both tests.
func TestReadOnlyGrantsNovaSchema(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, suite := range testenv.NovaSuites() {
		t.Run(suite, func(t *testing.T) {
			testenv.Need(t, testenv.NovaChroot(suite))
			for _, backend := range []string{"postgresql", "mysql"} {
				t.Run(backend, func(t *testing.T) {
					testenv.Need(t, backendDeps(backend)...)
					prefix := "ice_nova_" + suite
					runReference(t, here, suite, backend, prefix, nil, nil) // the schema only
					user := fmt.Sprintf("ice_nova_reader_%d", os.Getpid())
					dbs := []string{prefix + "_api", prefix + "_cell1", prefix + "_cell2"}
					admin := func(db string) *sql.DB {
						dsn := "host=127.0.0.1 port=5432 user=postgres sslmode=disable dbname=" + db
						driver := "postgres"
						if backend == "mysql" {
							driver, dsn = "mysql", "root@tcp(127.0.0.1:3306)/"+db
						}
						d, err := sql.Open(driver, dsn)
						if err != nil {
							t.Fatal(err)
						}
						d.SetMaxOpenConns(1)
						t.Cleanup(func() { _ = d.Close() })
						return d
					}
					conns := map[string]*sql.DB{}
					for _, db := range dbs {
						conns[db] = admin(db)
					}
					on := conns[dbs[0]]
					script := strings.ReplaceAll(novadb.GrantSQL(backend, user, dbs[0], dbs[1:]...), "'CHANGE-ME'", "'R3ader-pw'")
					t.Cleanup(func() {
						if backend == "postgresql" {
							for _, c := range conns {
								_, _ = c.Exec("DROP OWNED BY " + user)
							}
							_, _ = conns[dbs[0]].Exec("DROP ROLE " + user)
						} else {
							_, _ = conns[dbs[0]].Exec("DROP USER '" + user + "'@'%'")
						}
					})
					for _, stmt := range strings.Split(script, "\n") {
						switch {
						case stmt == "" || strings.HasPrefix(stmt, "--"):
						case strings.HasPrefix(stmt, `\connect `):
							on = conns[strings.TrimPrefix(stmt, `\connect `)]
						default:
							if _, err := on.Exec(stmt); err != nil {
								t.Fatalf("%s: %v", stmt, err)
							}
						}
					}
					base := "postgresql+psycopg2://" + user + ":R3ader-pw@127.0.0.1:5432/"
					query := ""
					if backend == "mysql" {
						base, query = "mysql+pymysql://"+user+":R3ader-pw@127.0.0.1:3306/", "?charset=utf8"
					}
					r, err := novadb.Open(novadb.Config{APIConnection: base + dbs[0] + query, CellTemplate: base + "{path}" + query,
						Connection: strings.Replace(base, user+":R3ader-pw", map[string]string{"postgresql": "postgres", "mysql": "root"}[backend], 1) + dbs[1] + query,
						Options:    dbconn.Options{QueryTimeout: 10 * time.Second}})
					if err != nil {
						t.Fatal(err)
					}
					defer func() { _ = r.Close() }()
					snap, err := r.Read(context.Background(), []string{"no-such-host"}, nil)
					if err != nil {
						t.Fatalf("nova_api as %s: %v", user, err)
					}
					if len(snap.Cells) != 2 { // cell0 skipped
						t.Fatalf("%d cells, want cell1 and cell2", len(snap.Cells))
					}
					for _, c := range snap.Cells {
						if c.Err != nil || c.Credentials != novadb.CredentialsTemplate || c.User != user {
							t.Errorf("cell %s: %v (credentials %q, user %q)", c.Cell.Name, c.Err, c.Credentials, c.User)
						}
					}
				})
			}
		})
	}
}
