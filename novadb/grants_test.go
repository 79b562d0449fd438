package novadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
)

var updateGrants = flag.Bool("update", false, "write deploy/sql/ from GrantSQL")

// grantFile is deploy/sql/'s script of backend: Nova's usual databases
// (nova_api, and the cell database "nova" that Kolla-Ansible,
// OpenStack-Ansible and openstack-helm create for cell1).
func grantFile(backend string) (path, text string) {
	return "../deploy/sql/nova-readonly." + backend + ".sql", GrantSQL(backend, "ironic_exporter_nova", "nova_api", "nova")
}

// TestGrantFiles: deploy/sql/ holds GrantSQL's scripts (go generate
// ./novadb writes them).
func TestGrantFiles(t *testing.T) {
	for _, backend := range GrantBackends {
		path, want := grantFile(backend)
		if *updateGrants {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not GrantSQL's (%v): run go generate ./novadb", path, err)
		}
	}
}

// TestGrantsFollowSQL: Grants name every identifier the statements use
// and nothing they do not, each column under a table its statements read.
func TestGrantsFollowSQL(t *testing.T) {
	words := regexp.MustCompile(`'[^']*'|[A-Za-z_][A-Za-z_0-9]*`)
	notColumns := map[string]bool{"select": true, "from": true, "where": true, "and": true, "order": true, "by": true,
		"in": true, "count": true, "coalesce": true, "max": true}
	check := func(name string, tables []TableColumns, stmts ...string) {
		used := map[string]bool{}
		for _, s := range stmts {
			for _, w := range words.FindAllString(s, -1) {
				w = strings.ToLower(w)
				if !strings.HasPrefix(w, "'") && !notColumns[w] && !slices.ContainsFunc(tables, func(tc TableColumns) bool { return tc.Table == w }) {
					used[w] = true
				}
			}
		}
		granted := map[string]bool{}
		for _, tc := range tables {
			for _, c := range tc.Columns {
				granted[c] = true
				if !slices.ContainsFunc(stmts, func(s string) bool {
					return strings.Contains(s, "FROM "+tc.Table) && regexp.MustCompile(`\b`+c+`\b`).MatchString(s)
				}) {
					t.Errorf("%s: %s.%s is granted, but no statement reading %s uses it", name, tc.Table, c, tc.Table)
				}
			}
		}
		for w := range used {
			if !granted[w] {
				t.Errorf("%s: the statements use %q, which Grants lack", name, w)
			}
		}
	}
	check("nova_api", Grants.API, SQLCellMappings)
	check("cell", Grants.Cell, SQLServices, SQLComputeNodes, SQLInstances, SQLInstancesOfHost("?"), SQLProbeComputeNodes, SQLProbeInstances)
}

// grantsSchema is the part of Nova's schema the test reads, with columns
// the reader does not read beside them (the user gets no grant on those),
// as Nova's models declare them (nova/db/api/models.py, nova/db/main/
// models.py).
func grantsSchema(backend string) (api, cell string) {
	dt, b := "DATETIME", "TINYINT(1)"
	bin := "`binary`"
	if backend == "postgresql" {
		dt, b, bin = "TIMESTAMP", "BOOLEAN", `"binary"`
	}
	api = `CREATE TABLE cell_mappings (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, uuid VARCHAR(36) NOT NULL,
  name VARCHAR(255), transport_url TEXT, database_connection TEXT, disabled ` + b + `)`
	cell = `CREATE TABLE services (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36), host VARCHAR(255), ` + bin + ` VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL DEFAULT 0,
  disabled ` + b + `, disabled_reason VARCHAR(255), last_seen_up ` + dt + `, forced_down ` + b + `, version INTEGER);
CREATE TABLE compute_nodes (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36), service_id INTEGER, host VARCHAR(255), vcpus INTEGER, hypervisor_type TEXT, hypervisor_hostname VARCHAR(255),
  cpu_info TEXT, mapped INTEGER);
CREATE TABLE instances (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36) NOT NULL, user_id VARCHAR(255), project_id VARCHAR(255), host VARCHAR(255), node VARCHAR(255),
  display_name VARCHAR(255), vm_state VARCHAR(255))`
	return api, cell
}

const grantsRows = `INSERT INTO services (id, created_at, deleted, host, %[1]s, topic, disabled, last_seen_up, forced_down, version)
  VALUES (1, '2026-12-04 08:00:00', 0, 'c-1', 'nova-compute', 'compute', %[2]s, '2026-12-04 08:00:05', %[2]s, 68);
INSERT INTO compute_nodes (id, created_at, deleted, uuid, host, vcpus, hypervisor_type, hypervisor_hostname)
  VALUES (1, '2026-12-04 07:00:00', 0, 'n1', 'c-1', 0, 'ironic', 'n1');
INSERT INTO instances (id, created_at, deleted, uuid, host, node, display_name) VALUES (1, '2026-12-04 07:00:00', 0, 'i1', 'c-1', 'n1', 'secret name')`

// TestReadOnlyGrants runs GrantSQL's script on PostgreSQL and MariaDB,
// then the reader as that user, nova_api by --nova.dsn and the cell by a
// template (--nova.cell-dsn-template) while cell_mappings holds the
// administrator's URL: it reads every row, and without any one of the
// grants a read fails. On MariaDB the user is made a second way, by
// Ansible's community.mysql.mysql_user with AnsiblePriv (as
// OpenStack-Ansible's galera_additional_users makes it), with the same
// checks.
func TestReadOnlyGrants(t *testing.T) {
	for _, how := range []struct{ backend, via string }{{"postgresql", "sql"}, {"mysql", "sql"}, {"mysql", "ansible"}} {
		backend := how.backend
		t.Run(backend+"-"+how.via, func(t *testing.T) {
			if how.via == "ansible" {
				testenv.Need(t, testenv.Ansible)
			}
			pid := os.Getpid()
			apiDB, cellDB := fmt.Sprintf("issue44_nova_api_%d", pid), fmt.Sprintf("issue44_nova_cell1_%d", pid)
			user := fmt.Sprintf("issue44_reader_%d", pid)
			var (
				admin        func(db string) *sql.DB
				adminURL     string // SQLAlchemy URL prefix of the superuser, no database
				readerPrefix string
				revoke       func(db, table, col string) string
				grant        func(db, table, col string) string
			)
			switch backend {
			case "postgresql":
				testenv.Need(t, testenv.PostgreSQL)
				dsn := testenv.EnvOr("ICE_TEST_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable")
				adminURL = testenv.EnvOr("ICE_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")
				admin = func(db string) *sql.DB {
					return openAdmin(t, "postgres", strings.Replace(dsn, "dbname=postgres", "dbname="+db, 1))
				}
				q := func(c string) string { return `"` + c + `"` }
				revoke = func(_, table, col string) string {
					return "REVOKE SELECT (" + q(col) + ") ON " + table + " FROM " + user
				}
				grant = func(_, table, col string) string { return "GRANT SELECT (" + q(col) + ") ON " + table + " TO " + user }
			default:
				testenv.Need(t, testenv.MariaDB)
				dsn := testenv.EnvOr("ICE_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/")
				adminURL = testenv.EnvOr("ICE_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")
				admin = func(db string) *sql.DB { return openAdmin(t, "mysql", dsn+db+"?multiStatements=true") }
				acct := "'" + user + "'@'%'"
				revoke = func(db, table, col string) string {
					return "REVOKE SELECT (`" + col + "`) ON `" + db + "`.`" + table + "` FROM " + acct
				}
				grant = func(db, table, col string) string {
					return "GRANT SELECT (`" + col + "`) ON `" + db + "`.`" + table + "` TO " + acct
				}
			}
			_, host, _ := strings.Cut(adminURL, "@")
			readerPrefix = strings.SplitN(adminURL, "://", 2)[0] + "://" + user + ":R3ader-pw@" + host
			root := admin(map[string]string{"postgresql": "postgres", "mysql": ""}[backend])
			apiSchema, cellSchema := grantsSchema(backend)
			for _, db := range []string{apiDB, cellDB} {
				mustExec(t, root, "CREATE DATABASE "+db)
				t.Cleanup(func() {
					if backend == "postgresql" {
						_, _ = root.Exec("DROP DATABASE " + db + " WITH (FORCE)")
					} else {
						_, _ = root.Exec("DROP DATABASE " + db)
					}
				})
			}
			apiConn, cellConn := admin(apiDB), admin(cellDB)
			mustExec(t, apiConn, apiSchema, fmt.Sprintf(`INSERT INTO cell_mappings (id, uuid, name, database_connection) VALUES
			  (1, '%s', 'cell0', 'sqlite:///nowhere'), (2, 'c1', 'cell1', '%s/%s')`, nova.Cell0UUID, adminURL, cellDB))
			bin, f := "`binary`", "0"
			if backend == "postgresql" {
				bin, f = `"binary"`, "false"
			}
			mustExec(t, cellConn, strings.Split(cellSchema, ";")...)
			mustExec(t, cellConn, strings.Split(fmt.Sprintf(grantsRows, bin, f), ";")...)

			// the script, as an operator runs it (psql's \connect done here)
			script := GrantSQL(backend, user, apiDB, cellDB)
			script = strings.ReplaceAll(script, "'CHANGE-ME'", "'R3ader-pw'")
			t.Cleanup(func() {
				if backend == "postgresql" {
					for _, c := range []*sql.DB{apiConn, cellConn} {
						_, _ = c.Exec("DROP OWNED BY " + user)
					}
					_, _ = root.Exec("DROP ROLE " + user)
				} else {
					_, _ = root.Exec("DROP USER '" + user + "'@'%'")
				}
			})
			on := root
			if how.via == "ansible" {
				args, _ := json.Marshal(map[string]string{"name": user, "host": "%", "password": "R3ader-pw",
					"priv": AnsiblePriv(apiDB, cellDB), "login_host": "127.0.0.1", "login_user": "root", "state": "present"})
				cmd := exec.Command("ansible", "localhost", "-c", "local", "-m", "community.mysql.mysql_user", "-a", string(args))
				cmd.Env = append(os.Environ(), "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3", "ANSIBLE_LOCALHOST_WARNING=false")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("mysql_user: %v\n%s", err, out)
				}
				script = "" // the user is made
			}
			for _, stmt := range strings.Split(script, "\n") {
				switch {
				case strings.HasPrefix(stmt, "--") || stmt == "":
				case strings.HasPrefix(stmt, `\connect `):
					on = map[string]*sql.DB{apiDB: apiConn, cellDB: cellConn}[strings.TrimPrefix(stmt, `\connect `)]
				default:
					mustExec(t, on, stmt)
				}
			}

			read := func() (*Snapshot, error) {
				r, err := Open(Config{APIConnection: readerPrefix + "/" + apiDB,
					CellTemplate: readerPrefix + "/{path}"})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = r.Close() }()
				snap, err := r.Read(context.Background(), []string{"c-9"}, nil) // SQLInstancesOfHost too
				if err == nil && snap.Cells[0].Err != nil {
					err = snap.Cells[0].Err
				}
				return snap, err
			}
			snap, err := read()
			if err != nil {
				t.Fatalf("the reader with the grants of GrantSQL: %v", err)
			}
			c := snap.Cells[0]
			if len(snap.Cells) != 1 || len(c.Cell.Services) != 1 || len(c.Cell.ComputeNodes) != 1 || len(c.Cell.Instances) != 1 {
				t.Fatalf("read %+v", snap.Cells)
			}
			if c.Credentials != CredentialsTemplate || c.User != user || strings.Contains(c.Database, "R3ader-pw") {
				t.Errorf("cell read as %q by %q (%s); want the template's user, no password", c.Credentials, c.User, c.Database)
			}
			// each grant is needed
			each := func(db string, conn *sql.DB, tables []TableColumns) {
				for _, tc := range tables {
					for _, col := range tc.Columns {
						mustExec(t, conn, revoke(db, tc.Table, col))
						if _, err := read(); err == nil {
							t.Errorf("the reader works without SELECT on %s.%s: the grant is not needed", tc.Table, col)
						}
						mustExec(t, conn, grant(db, tc.Table, col))
					}
				}
			}
			if how.via == "ansible" {
				// services is granted whole (AnsiblePriv); the SQL
				// variant shows each column grant is needed
				return
			}
			each(apiDB, apiConn, Grants.API)
			each(cellDB, cellConn, Grants.Cell)
			if _, err := read(); err != nil {
				t.Errorf("after granting back: %v", err)
			}
		})
	}
}

func openAdmin(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	d, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func mustExec(t *testing.T, d *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if _, err := d.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestAnsiblePrivInDocs: docs/nova-database.md gives OpenStack-Ansible's
// galera_additional_users the priv string of Grants.
func TestAnsiblePrivInDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/nova-database.md")
	if err != nil {
		t.Fatal(err)
	}
	want := `priv: "` + AnsiblePriv("nova_api", "nova") + `"`
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/nova-database.md lacks\n%s", want)
	}
}
