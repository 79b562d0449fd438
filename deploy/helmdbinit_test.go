package deploy

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy/helm"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
)

// The chart's dbInit Job (templates/db-init.yaml, scripts/db-init.sh)
// creates the read-only users the way openstack-helm's db-init jobs create
// theirs (helm-toolkit manifests/_job-db-init-mysql.tpl and
// scripts/_db-init.py.tpl, read at openstack-helm 0d5b16ca and 1775e1be):
// a Job whose containers each get the administrator's connection
// (ROOT_DB_CONNECTION, from a Secret's DB_CONNECTION) and the user's own
// (DB_CONNECTION), the user's name, password and database taken from the
// latter. Here it runs as a Helm hook before install and upgrade, with the
// grants of deploy/sql/ byte for byte.

// checkHelmDBInit: the Job and its hook Secret exist exactly when the
// profile turns dbInit on, run before install and upgrade, read the
// administrator's connection from the profile's Secret and each user's DSN
// from the Secret the exporter reads it from, and carry deploy/sql/'s
// scripts unchanged.
func checkHelmDBInit(t *testing.T, p helmProfile, r *rendered) {
	if p.dbInitAdmin == "" {
		if len(r.jobs)+len(r.hooks) > 0 {
			t.Errorf("%d Jobs and %d hook Secrets with dbInit off", len(r.jobs), len(r.hooks))
		}
		return
	}
	if len(r.jobs) != 1 || len(r.hooks) != 1 {
		t.Fatalf("%d Jobs and %d hook Secrets, want one of each", len(r.jobs), len(r.hooks))
	}
	job, sec := r.jobs[0], r.hooks[0]
	for _, m := range []map[string]string{job.Annotations, sec.Annotations} {
		if m["helm.sh/hook"] != "pre-install,pre-upgrade" || !strings.Contains(m["helm.sh/hook-delete-policy"], "before-hook-creation") {
			t.Errorf("hook annotations %v: want pre-install,pre-upgrade, recreated each time", m)
		}
	}
	if sec.Annotations["helm.sh/hook-weight"] >= job.Annotations["helm.sh/hook-weight"] && sec.Annotations["helm.sh/hook-weight"] != "-5" {
		t.Error("the script's Secret is not created before the Job")
	}
	for _, f := range []string{"ironic-readonly.mysql.sql", "nova-readonly.mysql.sql"} {
		want, err := os.ReadFile(filepath.Join(root, helm.SQLDir, f))
		if err != nil || sec.StringData[f] != string(want) {
			t.Errorf("the Job's %s is not deploy/sql/'s (%v)", f, err)
		}
	}
	script, _ := os.ReadFile(filepath.Join(chartDir(), "scripts", "db-init.sh"))
	if sec.StringData["db-init.sh"] != string(script) {
		t.Error("the Job's db-init.sh is not the chart's scripts/db-init.sh")
	}
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("the Job's pod mounts a token or restarts in place")
	}
	if sel := r.deployments[0].Spec.Selector.MatchLabels; job.Spec.Template.Labels["app.kubernetes.io/component"] == sel["app.kubernetes.io/component"] {
		t.Error("the Job's pod carries the exporter's selector labels: the Service and PDB would count it")
	}
	want := map[string][2]string{"ironic": {p.dsnSecret, p.dsnKey}, "nova": {p.novaSecret, "api-dsn"}}
	var names []string
	for _, c := range pod.Containers {
		names = append(names, c.Name)
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		ref := func(n string) [2]string {
			if e := env[n]; e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
			}
			return [2]string{}
		}
		if got := ref("ROOT_DB_CONNECTION"); got != [2]string{p.dbInitAdmin, "DB_CONNECTION"} {
			t.Errorf("%s: the administrator's connection from %v", c.Name, got)
		}
		if got := ref("DB_CONNECTION"); got != want[c.Name] {
			t.Errorf("%s: the user's DSN from %v, want the exporter's %v", c.Name, got, want[c.Name])
		}
		if g := strings.TrimPrefix(env["GRANTS"].Value, "/db-init/"); sec.StringData[g] == "" {
			t.Errorf("%s: GRANTS %q is not in the Secret", c.Name, env["GRANTS"].Value)
		}
		if c.Image != "docker.io/library/mariadb:10.11" || c.SecurityContext == nil || !isTrue(c.SecurityContext.ReadOnlyRootFilesystem) || !isTrue(c.SecurityContext.RunAsNonRoot) {
			t.Errorf("%s: image %s, or not read-only and non-root", c.Name, c.Image)
		}
	}
	if !slices.Equal(names, []string{"ironic", "nova"}) {
		t.Errorf("containers %v, want ironic and nova", names)
	}
}

// novaSchema is the part of Nova's schema the reader reads, with columns it
// does not read beside them (nova/db/api/models.py, nova/db/main/
// models.py): the read-only user gets no grant on those.
func novaSchema(backend string) (api, cell []string) {
	dt, b, bin := "DATETIME", "TINYINT(1)", "`binary`"
	if backend == "postgresql" {
		dt, b, bin = "TIMESTAMP", "BOOLEAN", `"binary"`
	}
	f := map[string]string{"postgresql": "false"}[backend]
	if f == "" {
		f = "0"
	}
	api = []string{`CREATE TABLE cell_mappings (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, uuid VARCHAR(36) NOT NULL,
  name VARCHAR(255), transport_url TEXT, database_connection TEXT, disabled ` + b + `)`}
	cell = []string{
		`CREATE TABLE services (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36), host VARCHAR(255), ` + bin + ` VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL DEFAULT 0,
  disabled ` + b + `, disabled_reason VARCHAR(255), last_seen_up ` + dt + `, forced_down ` + b + `, version INTEGER)`,
		`CREATE TABLE compute_nodes (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36), service_id INTEGER, host VARCHAR(255), vcpus INTEGER, hypervisor_type TEXT, hypervisor_hostname VARCHAR(255))`,
		`CREATE TABLE instances (id INTEGER PRIMARY KEY, created_at ` + dt + `, updated_at ` + dt + `, deleted_at ` + dt + `, deleted INTEGER,
  uuid VARCHAR(36) NOT NULL, host VARCHAR(255), node VARCHAR(255), display_name VARCHAR(255))`,
		`INSERT INTO services (id, created_at, deleted, host, ` + bin + `, topic, disabled, last_seen_up, forced_down, version)
  VALUES (1, '2026-12-04 08:00:00', 0, 'c-1', 'nova-compute', 'compute', ` + f + `, '2026-12-04 08:00:05', ` + f + `, 68)`,
		`INSERT INTO compute_nodes (id, created_at, deleted, uuid, host, vcpus, hypervisor_type, hypervisor_hostname)
  VALUES (1, '2026-12-04 07:00:00', 0, 'n1', 'c-1', 0, 'ironic', 'n1')`,
		`INSERT INTO instances (id, created_at, deleted, uuid, host, node, display_name) VALUES (1, '2026-12-04 07:00:00', 0, 'i1', 'c-1', 'n1', 'x')`,
	}
	return api, cell
}

// pctEncode percent-encodes every byte but letters and digits, as a
// password in a SQLAlchemy URL may be.
func pctEncode(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestHelmDBInitScript runs the Job the chart renders as its containers
// run (its script and deploy/sql/'s grants from its hook Secret, its
// environment with the Secrets resolved) against the local MariaDB and
// PostgreSQL, twice (install, then upgrade: the users exist), for Ironic's
// fixture database and a nova_api with two cells; then the exporter's
// readers work as the users the Job made (Ironic's snapshot of the
// fixture, Nova's two cells by the cells' template while cell_mappings
// hold the administrator's URL), and the users can neither write nor read
// what the grants leave out.
func TestHelmDBInitScript(t *testing.T) {
	testenv.Need(t, testenv.PostgreSQL, testenv.MariaDB)
	dbs := ironicDBs(t)
	pid := os.Getpid()
	// the install's password, then the upgrade's (rotated in the DSN
	// Secrets): quotes, a backslash, & and URL delimiters, percent-encoded
	// in the URLs
	const installPW, upgradePW = `R3ad'er\p&w@d:%x`, `n3w"pw'&\/?#`
	for _, backend := range []string{"mysql", "postgresql"} {
		t.Run(backend, func(t *testing.T) {
			pw := installPW
			ironicUser, novaUser := fmt.Sprintf("issue44b_ironic_ro_%d", pid), fmt.Sprintf("issue44b_nova_ro_%d", pid)
			apiDB := fmt.Sprintf("issue44b_nova_api_%d", pid)
			cells := []string{fmt.Sprintf("issue44b_cell1_%d", pid), fmt.Sprintf("issue44b_cell2_%d", pid)}
			var (
				fixture    = dbs[map[string]string{"mysql": "mariadb", "postgresql": "postgresql"}[backend]]
				adminURL   string // no database
				scheme     string
				rawDriver  string
				rawDSN     func(user, db string) string
				adminConn  func(db string) *sql.DB
				dropUser   func(root *sql.DB, user string)
				ironicName = fixture.dsn[strings.LastIndex(fixture.dsn, "/")+1:]
			)
			ironicName, _, _ = strings.Cut(ironicName, "?")
			if backend == "mysql" {
				adminURL, scheme, rawDriver = "mysql+pymysql://root@127.0.0.1:3306", "mysql+pymysql", "mysql"
				rawDSN = func(user, db string) string { return user + ":" + pw + "@tcp(127.0.0.1:3306)/" + db }
				adminConn = func(db string) *sql.DB { return openDB(t, "mysql", "root@tcp(127.0.0.1:3306)/"+db) }
				dropUser = func(root *sql.DB, user string) { _, _ = root.Exec("DROP USER IF EXISTS '" + user + "'@'%'") }
			} else {
				adminURL, scheme, rawDriver = "postgresql://postgres@127.0.0.1:5432/postgres", "postgresql", "postgres"
				rawDSN = func(user, db string) string {
					return "postgres://" + user + ":" + pctEncode(pw) + "@127.0.0.1:5432/" + db + "?sslmode=disable"
				}
				adminConn = func(db string) *sql.DB {
					return openDB(t, "postgres", "host=127.0.0.1 port=5432 user=postgres dbname="+db+" sslmode=disable")
				}
				dropUser = func(root *sql.DB, user string) {
					for _, d := range append([]string{ironicName, apiDB}, cells...) {
						if c, err := sql.Open("postgres", "host=127.0.0.1 port=5432 user=postgres sslmode=disable dbname="+d); err == nil {
							_, _ = c.Exec("DROP OWNED BY " + user)
							_ = c.Close()
						}
					}
					_, _ = root.Exec("DROP ROLE IF EXISTS " + user)
				}
			}
			root := adminConn(map[string]string{"mysql": "", "postgresql": "postgres"}[backend])
			userURL := func(user, db string) string {
				return scheme + "://" + user + ":" + pctEncode(pw) + "@127.0.0.1:" + map[string]string{"mysql": "3306", "postgresql": "5432"}[backend] + "/" + db
			}
			for _, d := range append([]string{apiDB}, cells...) {
				mustExecDB(t, root, "CREATE DATABASE "+d)
			}
			t.Cleanup(func() {
				dropUser(root, ironicUser)
				dropUser(root, novaUser)
				for _, d := range append([]string{apiDB}, cells...) {
					_, _ = root.Exec("DROP DATABASE " + d + map[string]string{"postgresql": " WITH (FORCE)"}[backend])
				}
			})
			apiSchema, cellSchema := novaSchema(backend)
			mustExecDB(t, adminConn(apiDB), append(apiSchema, fmt.Sprintf(`INSERT INTO cell_mappings (id, uuid, name, database_connection) VALUES
			  (1, '%s', 'cell0', 'sqlite:///nowhere'), (2, 'c1', 'cell1', '%s/%s'), (3, 'c2', 'cell2', '%s/%s')`,
				nova.Cell0UUID, strings.TrimSuffix(adminURL, "/postgres"), cells[0], strings.TrimSuffix(adminURL, "/postgres"), cells[1]))...)
			for _, c := range cells {
				mustExecDB(t, adminConn(c), cellSchema...)
			}

			// The chart's Job for these databases.
			v, err := chartutil.ReadValues([]byte(fmt.Sprintf(`{dbInit: {enabled: true, backend: %s, adminSecret: {name: admin},
			  novaCellDatabases: [%s]}, nova: {enabled: true}}`, backend, strings.Join(cells, ", "))))
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := renderChart(loadChart(t), v)
			if err != nil {
				t.Fatal(err)
			}
			var job *batchv1.Job
			var hook *corev1.Secret
			for _, o := range decodeDocs(t, "db-init.yaml", []byte(out["ironic-conductor-exporter/templates/db-init.yaml"])) {
				switch o := o.(type) {
				case *batchv1.Job:
					job = o
				case *corev1.Secret:
					hook = o
				}
			}
			if job == nil || hook == nil {
				t.Fatal("no Job or no Secret rendered")
			}
			secrets := func() map[string]map[string]string {
				return map[string]map[string]string{
					"admin":                          {"DB_CONNECTION": adminURL},
					"ironic-conductor-exporter-db":   {"dsn": userURL(ironicUser, ironicName)},
					"ironic-conductor-exporter-nova": {"api-dsn": userURL(novaUser, apiDB)},
				}
			}
			dir := t.TempDir()
			for k, v := range hook.StringData {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o444); err != nil {
					t.Fatal(err)
				}
			}
			runJob := func(run string) {
				for _, c := range job.Spec.Template.Spec.Containers {
					env := []string{"PATH=" + os.Getenv("PATH")}
					for _, e := range c.Env {
						val := e.Value
						if e.ValueFrom != nil {
							val = secrets()[e.ValueFrom.SecretKeyRef.Name][e.ValueFrom.SecretKeyRef.Key]
						}
						env = append(env, e.Name+"="+strings.ReplaceAll(val, "/db-init/", dir+"/"))
					}
					cmd := exec.Command(c.Command[0], strings.ReplaceAll(c.Command[1], "/db-init/", dir+"/"))
					cmd.Env = env
					b, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s, container %s: %v\n%s", run, c.Name, err, b)
					}
					want := map[string]string{"install": "created", "upgrade": "updated"}[run]
					if !strings.Contains(string(b), "("+want+")") || !strings.Contains(string(b), "connects to") {
						t.Errorf("%s, container %s: the user not %s or not connecting:\n%s", run, c.Name, want, b)
					}
					t.Logf("%s, %s:\n%s", run, c.Name, b)
				}
			}
			runJob("install")
			pw = upgradePW
			runJob("upgrade")
			// MariaDB checks passwords here; the local PostgreSQL trusts
			// loopback connections, so there the rotation is not seen.
			for _, u := range map[string][]struct{ user, db string }{"mysql": {{ironicUser, ironicName}, {novaUser, apiDB}}}[backend] {
				old := strings.Replace(rawDSN(u.user, u.db), map[string]string{"mysql": pw, "postgresql": pctEncode(pw)}[backend],
					map[string]string{"mysql": installPW, "postgresql": pctEncode(installPW)}[backend], 1)
				if err := openDB(t, rawDriver, old).Ping(); err == nil {
					t.Errorf("%s still logs in with the install's password after the upgrade rotated it", u.user)
				}
			}

			// The exporter's readers, as the users the Job made.
			ctx := context.Background()
			d, err := db.Open(userURL(ironicUser, ironicName)+map[string]string{"postgresql": "?sslmode=disable"}[backend], dbconn.Options{QueryTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := d.Snapshot(ctx)
			d.Close()
			if err != nil || len(snap.Nodes) != fixtureNodes {
				t.Errorf("Ironic's reader as %s: %v (%d nodes, want %d)", ironicUser, err, len(nodesOf(snap)), fixtureNodes)
			}
			q := map[string]string{"postgresql": "?sslmode=disable"}[backend]
			r, err := novadb.Open(novadb.Config{APIConnection: userURL(novaUser, apiDB) + q,
				CellTemplate: userURL(novaUser, "{path}") + q})
			if err != nil {
				t.Fatal(err)
			}
			ns, err := r.Read(ctx, nil, nil)
			_ = r.Close()
			if err != nil || len(ns.Cells) != 2 {
				t.Fatalf("Nova's reader as %s: %v, %d cells", novaUser, err, len(ns.Cells))
			}
			for _, c := range ns.Cells {
				if c.Err != nil || len(c.Cell.Services) != 1 || len(c.Cell.ComputeNodes) != 1 || len(c.Cell.Instances) != 1 ||
					c.Credentials != novadb.CredentialsTemplate || c.User != novaUser {
					t.Errorf("cell %s read as %s (%s): %v, %d services", c.Database, c.User, c.Credentials, c.Err, len(c.Cell.Services))
				}
			}

			// Nothing more: each connection reads what it is granted
			// (so that a failure below is the grant's, not the
			// connection's) and nothing else.
			for _, tc := range []struct{ user, db, stmt string }{
				{ironicUser, ironicName, "SELECT count(*) FROM nodes"},
				{novaUser, apiDB, "SELECT name FROM cell_mappings"},
				{novaUser, cells[0], "SELECT host FROM services"},
				{novaUser, cells[1], "SELECT node FROM instances"},
			} {
				var n any
				if err := openDB(t, rawDriver, rawDSN(tc.user, tc.db)).QueryRow(tc.stmt).Scan(&n); err != nil {
					t.Errorf("%s on %s: %s: %v", tc.user, tc.db, tc.stmt, err)
				}
			}
			for _, tc := range []struct{ user, db, stmt string }{
				{ironicUser, ironicName, "UPDATE nodes SET maintenance = " + map[string]string{"mysql": "1", "postgresql": "true"}[backend]},
				{ironicUser, ironicName, "DELETE FROM conductors"},
				{ironicUser, ironicName, "INSERT INTO alembic_version (version_num) VALUES ('x')"},
				{ironicUser, ironicName, "SELECT address FROM ports"},
				{ironicUser, ironicName, "CREATE TABLE issue44b_t (i INTEGER)"},
				{novaUser, apiDB, "SELECT transport_url FROM cell_mappings"},
				{novaUser, apiDB, "UPDATE cell_mappings SET name = 'x'"},
				{novaUser, cells[0], "DELETE FROM services"},
				{novaUser, cells[1], "UPDATE instances SET host = 'x'"},
				{novaUser, cells[1], "SELECT display_name FROM instances"},
			} {
				c := openDB(t, rawDriver, rawDSN(tc.user, tc.db))
				_, err := c.Exec(tc.stmt)
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), "denied") {
					t.Errorf("%s on %s: %s: %v, want permission denied", tc.user, tc.db, tc.stmt, err)
				}
			}
		})
	}
}

func nodesOf(s *db.Snapshot) []*db.Node {
	if s == nil {
		return nil
	}
	return s.Nodes
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	d, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func mustExecDB(t *testing.T, d *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := d.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestHelmDBInitScriptRejects: the Job's script refuses, before connecting
// anywhere, what it cannot run safely: a missing setting, a user or
// database name that is not a plain SQL name (it is written into SQL), a
// DSN without a password, connections to two backends, the other backend's
// script.
func TestHelmDBInitScriptRejects(t *testing.T) {
	script := filepath.Join(chartDir(), "scripts", "db-init.sh")
	mysqlGrants := filepath.Join(root, helm.SQLDir, "nova-readonly.mysql.sql")
	base := map[string]string{
		"ROOT_DB_CONNECTION": "mysql+pymysql://root:pw@db.invalid:3306", "DB_CONNECTION": "mysql+pymysql://ro:pw@db.invalid/nova_api",
		"GRANTS": mysqlGrants, "GRANTS_USER": "ironic_exporter_nova", "GRANTS_DATABASE": "nova_api", "GRANTS_CELL_DATABASE": "nova",
	}
	for name, tc := range map[string]struct {
		set  map[string]string
		want string
	}{
		"no admin":        {map[string]string{"ROOT_DB_CONNECTION": ""}, "ROOT_DB_CONNECTION not set"},
		"user name":       {map[string]string{"DB_CONNECTION": "mysql+pymysql://ro'x:pw@db.invalid/nova_api"}, "is not a plain SQL name"},
		"database name":   {map[string]string{"DB_CONNECTION": "mysql+pymysql://ro:pw@db.invalid/nova-api"}, "is not a plain SQL name"},
		"cell name":       {map[string]string{"CELL_DATABASES": "nova nova;x"}, `cell database "nova;x"`},
		"no password":     {map[string]string{"DB_CONNECTION": "mysql+pymysql://ro@db.invalid/nova_api"}, "has no password"},
		"two backends":    {map[string]string{"DB_CONNECTION": "postgresql://ro:pw@db.invalid/nova_api"}, "name other backends"},
		"other's script":  {map[string]string{"ROOT_DB_CONNECTION": "postgresql://postgres:pw@db.invalid/postgres", "DB_CONNECTION": "postgresql://ro:pw@db.invalid/nova_api"}, "is not the postgresql script"},
		"not a URL":       {map[string]string{"ROOT_DB_CONNECTION": "root:pw@db.invalid"}, "not a URL"},
		"unknown backend": {map[string]string{"ROOT_DB_CONNECTION": "oracle://root:pw@db.invalid"}, "neither MySQL nor PostgreSQL"},
	} {
		t.Run(name, func(t *testing.T) {
			env := []string{"PATH=" + os.Getenv("PATH")}
			for k, v := range base {
				if o, ok := tc.set[k]; ok {
					v = o
				}
				env = append(env, k+"="+v)
			}
			for k, v := range tc.set {
				if _, ok := base[k]; !ok {
					env = append(env, k+"="+v)
				}
			}
			cmd := exec.Command("bash", script)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("%v: %s; want a failure saying %q", err, out, tc.want)
			}
		})
	}
}
