package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

func sp(s string) *string { return &s }

func ts(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", s, time.UTC)
	if err != nil {
		panic(err)
	}
	return t
}

// fixture rows: the awkward cases Ironic databases hold.
var fixtureSQL = []string{
	`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at) VALUES
	 (1, 'cond-a.example.com', '["ipmi", "redfish"]', true, '', '2024-01-02 03:04:05.123456', '2024-03-10 02:30:00'),
	 (2, 'cond-b.example.com:6385', NULL, NULL, 'rack1', '2023-06-30 23:59:59', NULL),
	 (3, 'kondüktör-ß.例え.jp', 'not json{', false, 'grüppe', '2024-11-03 01:30:00', '2024-11-03 01:30:00.5'),
	 (4, '[2001:db8::1]:8080', '[1, 2]', true, 'rack1', '1999-12-31 23:59:59.999999', '2000-01-01 00:00:00'),
	 (7, 'cond-z', '[]', true, 'Rack2', '2024-07-01 12:00:00', '2024-07-01 12:00:00')`,
	// Several interface rows per (conductor, hardware type): DISTINCT matters.
	// "Ipmi" and "ipmi" are two ring keys for Ironic, also where the
	// collation (MySQL's utf8mb3_general_ci) calls them equal.
	`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default") VALUES
	 (1, 'redfish', 'boot', 'redfish-virtual-media', true),
	 (1, 'redfish', 'boot', 'ipxe', false),
	 (1, 'redfish', 'power', 'redfish', true),
	 (1, 'ipmi', 'boot', 'ipxe', true),
	 (1, 'ipmi', 'boot', 'pxe', false),
	 (1, 'ipmi', 'deploy', 'direct', true),
	 (1, 'ipmi', 'power', 'ipmitool', true),
	 (3, 'manual-management', 'power', 'fake', true),
	 (3, 'Ipmi', 'power', 'ipmitool', true),
	 (3, 'Ipmi', 'boot', 'pxe', true),
	 (3, 'ipmi', 'boot', 'ipxe', true),
	 (7, 'idrac', 'power', 'idrac-redfish', true)`,
	`INSERT INTO nodes (id, uuid, name, driver, conductor_group, reservation, instance_uuid, power_state,
	                   provision_state, maintenance, resource_class, created_at, updated_at,
	                   conductor_affinity, target_provision_state, owner, lessee) VALUES
	 (1, '1be26c0b-03f2-4d2e-ae87-c02d7f33c123', 'node-1', 'ipmi', '', 'cond-a.example.com',
	  '8e2a4d4c-8b25-4c3a-9d8e-5d0a6b2f1c11', 'power on', 'active', true, 'baremetal',
	  '2024-03-10 02:30:00', '2024-03-10 07:00:00.000001', 1, NULL, 'f3a1c9e0d2b84e6f9a7c5b3d1e0f2a4b', NULL),
	 (2, '2be26c0b-03f2-4d2e-ae87-c02d7f33c123', NULL, 'redfish', 'rack1', NULL, NULL, NULL,
	  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	 (10, '3be26c0b-03f2-4d2e-ae87-c02d7f33c123', 'nœud-3', 'idrac', 'grüppe', 'cond-gone', NULL, 'power off',
	  'inspect wait', false, '', '2020-02-29 00:00:00', '2020-02-29 23:59:59', 3, 'manageable',
	  'f3a1c9e0d2b84e6f9a7c5b3d1e0f2a4b', 'Projekt-ö')`,
}

var fixtureWant = &Snapshot{
	Backend:  rules.PostgreSQL,
	NodeRead: NodeReadFull,
	Conductors: []Conductor{
		{ID: 1, Hostname: "cond-a.example.com", ConductorGroup: "", Online: true,
			CreatedAt: ts("2024-01-02 03:04:05.123456"), UpdatedAt: ts("2024-03-10 02:30:00"),
			Drivers: []string{"ipmi", "redfish"}, HardwareTypes: []string{"ipmi", "redfish"}},
		{ID: 2, Hostname: "cond-b.example.com:6385", ConductorGroup: "rack1", Online: false,
			CreatedAt: ts("2023-06-30 23:59:59")},
		{ID: 3, Hostname: "kondüktör-ß.例え.jp", ConductorGroup: "grüppe", Online: false,
			CreatedAt: ts("2024-11-03 01:30:00"), UpdatedAt: ts("2024-11-03 01:30:00.5"),
			HardwareTypes: []string{"Ipmi", "ipmi", "manual-management"}},
		{ID: 4, Hostname: "[2001:db8::1]:8080", ConductorGroup: "rack1", Online: true,
			CreatedAt: ts("1999-12-31 23:59:59.999999"), UpdatedAt: ts("2000-01-01 00:00:00")},
		{ID: 7, Hostname: "cond-z", ConductorGroup: "Rack2", Online: true,
			CreatedAt: ts("2024-07-01 12:00:00"), UpdatedAt: ts("2024-07-01 12:00:00"),
			Drivers: []string{}, HardwareTypes: []string{"idrac"}},
	},
	Nodes: []*Node{
		{ID: 1, UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Name: sp("node-1"), Driver: "ipmi",
			ConductorGroup: "", Reservation: sp("cond-a.example.com"),
			InstanceUUID: sp("8e2a4d4c-8b25-4c3a-9d8e-5d0a6b2f1c11"), PowerState: sp("power on"),
			ProvisionState: sp("active"), Maintenance: true, ResourceClass: sp("baremetal"),
			CreatedAt: StampOf(ts("2024-03-10 02:30:00")), UpdatedAt: StampOf(ts("2024-03-10 07:00:00.000001")),
			HasConductorAffinity: true, ConductorAffinity: 1, Owner: sp("f3a1c9e0d2b84e6f9a7c5b3d1e0f2a4b")},
		{ID: 2, UUID: "2be26c0b-03f2-4d2e-ae87-c02d7f33c123", Driver: "redfish", ConductorGroup: "rack1"},
		{ID: 10, UUID: "3be26c0b-03f2-4d2e-ae87-c02d7f33c123", Name: sp("nœud-3"), Driver: "idrac",
			ConductorGroup: "grüppe", Reservation: sp("cond-gone"), PowerState: sp("power off"),
			ProvisionState: sp("inspect wait"), TargetProvisionState: sp("manageable"), ResourceClass: sp(""),
			CreatedAt: StampOf(ts("2020-02-29 00:00:00")), UpdatedAt: StampOf(ts("2020-02-29 23:59:59")), HasConductorAffinity: true, ConductorAffinity: 3,
			Owner: sp("f3a1c9e0d2b84e6f9a7c5b3d1e0f2a4b"), Lessee: sp("Projekt-ö")},
	},
	Warnings: []string{
		`conductor "kondüktör-ß.例え.jp" (id 3): drivers column is not a JSON list of strings, read as empty: invalid character 'o' in literal null (expecting 'u')`,
		`conductor "[2001:db8::1]:8080" (id 4): drivers column is not a JSON list of strings, read as empty: json: cannot unmarshal number into Go value of type string`,
	},
	WarningCounts: []WarningCount{{Table: "conductors", Reason: ReasonBadJSON, Rows: 2}},
}

// wantFor is fixtureWant as backend kind stores and returns it:
//   - MySQL: Ironic's DATETIME columns have no fractional seconds, and
//     MariaDB truncates them (MySQL would round);
//   - SQLite: values are the text inserted; SQLAlchemy (so Ironic, so the
//     exporter) reads the digits after the dot as microseconds, so ".5" is
//     5µs (SQLAlchemy itself always writes six digits).
func wantFor(kind rules.Backend) *Snapshot {
	w := cloneSnapshot(fixtureWant)
	w.Backend = kind
	w.SchemaRevision = schemaHead(kind)
	switch kind {
	case rules.MySQL:
		trunc := func(t *time.Time) { *t = t.Truncate(time.Second) }
		for i := range w.Conductors {
			trunc(&w.Conductors[i].CreatedAt)
			trunc(&w.Conductors[i].UpdatedAt)
		}
		truncStamp := func(s *Stamp) { *s = StampOf(s.Time().Truncate(time.Second)) }
		for i := range w.Nodes {
			truncStamp(&w.Nodes[i].CreatedAt)
			truncStamp(&w.Nodes[i].UpdatedAt)
		}
	case rules.SQLite:
		w.Conductors[2].UpdatedAt = ts("2024-11-03 01:30:00.000005")
	}
	return w
}

// schemaHead is the alembic revision of kind's test schema, read from it:
// a test of one backend needs no other.
func schemaHead(kind rules.Backend) string {
	schemaHeads.mu.Lock()
	defer schemaHeads.mu.Unlock()
	if rev, ok := schemaHeads.m[kind]; ok {
		return rev
	}
	driver, dsn := "postgres", adminDSNFor(testDBName)
	switch kind {
	case rules.MySQL:
		driver, dsn = "mysql", mysqlAdminDSN+mysqlDBName
	case rules.SQLite:
		driver, dsn = "sqlite", "file:"+sqlitePath
	}
	conn, err := sql.Open(driver, dsn)
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	var rev string
	if err := conn.QueryRow(SQLSchemaRevision).Scan(&rev); err != nil {
		panic(fmt.Sprintf("reading the %s test schema's revision: %v", kind, err))
	}
	schemaHeads.m[kind] = rev
	return rev
}

var schemaHeads = struct {
	mu sync.Mutex
	m  map[rules.Backend]string
}{m: map[rules.Backend]string{}}

func cloneSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Conductors = slices.Clone(s.Conductors)
	c.Nodes = make([]*Node, len(s.Nodes)) // wantFor writes them
	for i, n := range s.Nodes {
		nc := *n
		c.Nodes[i] = &nc
	}
	c.Warnings = slices.Clone(s.Warnings)
	c.WarningCounts = slices.Clone(s.WarningCounts)
	return &c
}

// snapshotIsFixture takes a snapshot with d and checks that it is the
// fixture as backend kind reads it (wantFor); it returns the snapshot.
func snapshotIsFixture(t *testing.T, d *DB, kind rules.Backend) *Snapshot {
	t.Helper()
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantFor(kind), got, timeCmp); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	return got
}

// timeCmp compares instants, wall clock and location: a value that reads
// the same instant in another zone is still a failure.
var timeCmp = cmp.Options{cmp.Comparer(func(a, b time.Time) bool {
	return a.Equal(b) && a.Location() == b.Location() && a.String() == b.String()
}), cmpopts.IgnoreFields(Snapshot{}, "NodeProbe")} // the probe has tests of its own (probe_test.go)

// loadFixture loads the fixture into the PostgreSQL test database.
func loadFixture(t *testing.T) { loadFixtureOn(t, pgBackend) }

func loadFixtureOn(t *testing.T, b *testBackend) {
	t.Helper()
	conn := b.admin(t)
	b.reset(t, conn)
	b.exec(t, conn, fixtureSQL...)
}

func TestSnapshot(t *testing.T) { forEachBackend(t, testSnapshot) }

func testSnapshot(t *testing.T, b *testBackend) {
	loadFixtureOn(t, b)
	d := openTest(t, b.dsn, dbconn.Options{})
	got := snapshotIsFixture(t, d, b.kind)
	// Every timestamp is in time.UTC, the zero value included.
	for _, c := range got.Conductors {
		for _, tm := range []time.Time{c.CreatedAt, c.UpdatedAt} {
			if tm.Location() != time.UTC {
				t.Errorf("conductor %d: time %v not in time.UTC", c.ID, tm)
			}
		}
	}
	if got.Conductors[1].UpdatedAt != (time.Time{}) {
		t.Errorf("NULL updated_at read as %v", got.Conductors[1].UpdatedAt)
	}

	// A second snapshot on the same pool gives the same thing.
	again, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, again, timeCmp); diff != "" {
		t.Errorf("second snapshot differs:\n%s", diff)
	}
}

func TestSnapshotEmpty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		b.reset(t, b.admin(t))
		d := openTest(t, b.dsn, dbconn.Options{})
		got, err := d.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Conductors) != 0 || len(got.Nodes) != 0 || len(got.Warnings) != 0 || got.Backend != b.kind {
			t.Errorf("empty database: %+v", got)
		}
	})
}

// TestSnapshotTimeZones checks the conditions TestSnapshot ran under and
// that other session time zones do not shift timestamps either.
func TestSnapshotTimeZones(t *testing.T) {
	needPG(t)
	loadFixture(t)
	if time.Local.String() != goTZ {
		t.Fatalf("time.Local is %s, want %s", time.Local, goTZ)
	}
	for _, tc := range []struct{ name, dsn, wantTZ string }{
		{"database default", testDSN, testTZ},
		{"session option", testDSN + "?options=-c%20timezone%3DPacific/Chatham", "Pacific/Chatham"},
		{"negative offset", testDSN + "?options=-c+TimeZone%3DAmerica/St_Johns", "America/St_Johns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openTest(t, tc.dsn, dbconn.Options{})
			setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
				if stage != "begin" {
					return nil
				}
				var tz string
				if err := tx.GetContext(ctx, &tz, `SHOW timezone`); err != nil {
					return err
				}
				if tz != tc.wantTZ {
					t.Errorf("session TimeZone %q, want %q", tz, tc.wantTZ)
				}
				return nil
			})
			snapshotIsFixture(t, d, rules.PostgreSQL)
		})
	}
}

// setHook makes h run inside d's snapshot transactions (DB.hook).
func setHook(d *DB, h func(ctx context.Context, stage string, tx *sqlx.Tx) error) { d.hook = h }

func TestSnapshotReadOnlyRepeatableRead(t *testing.T) {
	needPG(t)
	loadFixture(t)
	d := openTest(t, testDSN, dbconn.Options{})
	var checked bool
	setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
		if stage != "begin" {
			return nil
		}
		checked = true
		for q, want := range map[string]string{
			`SHOW transaction_read_only`: "on",
			`SHOW transaction_isolation`: "repeatable read",
		} {
			var got string
			if err := tx.GetContext(ctx, &got, q); err != nil {
				return err
			}
			if got != want {
				t.Errorf("%s = %q, want %q", q, got, want)
			}
		}
		// A write fails; the savepoint keeps the transaction usable.
		if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE nodes SET maintenance = false`)
		if pq.As(err, pqerror.ReadOnlySQLTransaction) == nil {
			t.Errorf("write in the snapshot transaction: err = %v, want SQLSTATE 25006 read_only_sql_transaction", err)
		}
		_, err = tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT w`)
		return err
	})
	writeRefused(t, d, &checked, testDBConn(t, testDBName))
}

// writeRefused takes a snapshot with d whose hook (which sets *checked)
// tried to clear node 1's maintenance flag, and checks that the hook ran
// and that admin still reads the flag set: the write did not happen.
func writeRefused(t *testing.T, d *DB, checked *bool, admin *sql.DB) {
	t.Helper()
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !*checked {
		t.Fatal("hook did not run")
	}
	var maint bool
	if err := admin.QueryRow(`SELECT maintenance FROM nodes WHERE id = 1`).Scan(&maint); err != nil || !maint {
		t.Errorf("node 1 maintenance = %v, %v; the write must not have happened", maint, err)
	}
}

// TestSnapshotConsistent commits changes between the queries of a snapshot:
// the snapshot must not see them (one REPEATABLE READ transaction), the next
// one must. On SQLite the writer can only commit during a read transaction
// in WAL mode (in rollback-journal mode the reader's SHARED lock makes it
// wait, which TestSQLiteConcurrentWriter covers).
func TestSnapshotConsistent(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.kind.String(), func(t *testing.T) {
			b.need(t)
			if b.kind == rules.SQLite {
				b = sqliteWALBackend(t)
			}
			testSnapshotConsistent(t, b)
		})
	}
}

func testSnapshotConsistent(t *testing.T, b *testBackend) {
	loadFixtureOn(t, b)
	admin := b.admin(t)
	d := openTest(t, b.dsn, dbconn.Options{})
	setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
		if stage == "conductors" {
			b.exec(t, admin,
				`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default")
				 VALUES (2, 'late-type', 'power', 'fake', true)`,
				`INSERT INTO nodes (id, uuid, driver) VALUES (99, 'late', 'late-type')`,
				`DELETE FROM nodes WHERE id = 2`)
		}
		return nil
	})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantFor(b.kind), got, timeCmp); diff != "" {
		t.Errorf("snapshot saw changes committed after it started (-want +got):\n%s", diff)
	}
	d.hook = nil
	got, err = d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Nodes); n != 3 || got.Nodes[2].ID != 99 || len(got.Conductors[1].HardwareTypes) != 1 {
		t.Errorf("next snapshot: %d nodes, conductor 2 types %v", n, got.Conductors[1].HardwareTypes)
	}
}

// TestSnapshotQueryTimeout holds an ACCESS EXCLUSIVE lock on a table from
// another connection: the query that needs it must fail at its deadline,
// saying which query, and the pool must work again afterwards.
func TestSnapshotQueryTimeout(t *testing.T) {
	needPG(t)
	loadFixture(t)
	admin := testDBConn(t, testDBName)
	const timeout = 300 * time.Millisecond
	d := openTest(t, testDSN, dbconn.Options{QueryTimeout: timeout})
	for _, tc := range []struct{ table, want string }{
		{"nodes", "reading the nodes columns: timed out after 300ms"}, // the first snapshot's first statement on the table
		{"conductors", "reading conductors: timed out after 300ms"},
		{"conductor_hardware_interfaces", "reading conductor hardware types: timed out after 300ms"},
	} {
		t.Run(tc.table, func(t *testing.T) {
			ctx := context.Background()
			lock, err := admin.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lock.Exec(`LOCK TABLE ` + tc.table + ` IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = d.Snapshot(ctx)
			elapsed := time.Since(start)
			if err := lock.Rollback(); err != nil {
				t.Fatal(err)
			}
			checkTimedOut(t, d, err, elapsed, timeout, tc.want)
		})
	}
}

func TestSnapshotCanceled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		loadFixtureOn(t, b)
		d := openTest(t, b.dsn, dbconn.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := d.Snapshot(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("snapshot with a canceled context: %v, want context.Canceled", err)
		}
	})
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestServerDown(t *testing.T) {
	for _, tc := range []struct{ name, scheme, query string }{
		{"postgresql", "postgresql+psycopg2", "?sslmode=disable"},
		{"mysql", "mysql+pymysql", "?charset=utf8"},
		{"mysql with TLS", "mysql+pymysql", "?ssl_verify_cert=false&ssl_check_hostname=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testServerDown(t, tc.scheme+"://ironic:"+"s3cr3t-PW%2Fwith%40chars"+"@127.0.0.1:"+itoa(closedPort(t))+"/ironic"+tc.query)
		})
	}
}

func testServerDown(t *testing.T, dsn string) {
	const password = "s3cr3t-PW/with@chars"
	start := time.Now()
	d := openTest(t, dsn, dbconn.Options{QueryTimeout: 2 * time.Second})
	if time.Since(start) > 100*time.Millisecond {
		t.Errorf("Open took %s: it must not connect", time.Since(start))
	}
	if s := d.String(); strings.Contains(s, "s3cr3t") || !strings.Contains(s, ":xxxxx@127.0.0.1") {
		t.Errorf("String() = %q", s)
	}
	_, err := d.Snapshot(context.Background())
	if err == nil {
		t.Fatal("snapshot of a down server succeeded")
	}
	t.Logf("snapshot: %v", err)
	t.Logf("ping: %v", d.Ping(context.Background()))
	for _, e := range []error{err, d.Ping(context.Background())} {
		msg := e.Error()
		if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, password) {
			t.Errorf("error contains the password: %q", msg)
		}
		if !strings.Contains(msg, "connection refused") {
			t.Errorf("error %q does not say the connection was refused", msg)
		}
	}
	if !strings.HasPrefix(err.Error(), "connecting to database: ") {
		t.Errorf("snapshot error %q does not say the connection failed", err)
	}
	if !strings.HasPrefix(d.Ping(context.Background()).Error(), "pinging database: ") {
		t.Errorf("ping error does not say ping")
	}
}

// TestSteinSchema reads a database migrated only up to the revision that
// added conductor_group: the snapshot queries use no later column.
func TestSteinSchema(t *testing.T) {
	needPG(t)
	conn := testDBConn(t, steinDBName)
	var rev string
	if err := conn.QueryRow(`SELECT version_num FROM alembic_version`).Scan(&rev); err != nil || rev != steinRevision {
		t.Fatalf("alembic version %q, %v; want %s", rev, err, steinRevision)
	}
	resetTables(t, conn)
	mustExec(t, conn,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
		 VALUES (1, 'old', '["ipmi"]', true, 'g', '2019-04-10 10:00:00', '2019-04-10 10:00:10')`,
		`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default")
		 VALUES (1, 'ipmi', 'power', 'ipmitool', true), (1, 'ipmi', 'boot', 'pxe', true)`,
		`INSERT INTO nodes (id, uuid, driver, conductor_group, maintenance, resource_class, provision_state)
		 VALUES (1, 'u1', 'ipmi', 'g', false, 'bm', 'available')`)
	d := openTest(t, steinDSN, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &Snapshot{
		Backend: rules.PostgreSQL,
		Conductors: []Conductor{{ID: 1, Hostname: "old", ConductorGroup: "g", Online: true,
			CreatedAt: ts("2019-04-10 10:00:00"), UpdatedAt: ts("2019-04-10 10:00:10"),
			Drivers: []string{"ipmi"}, HardwareTypes: []string{"ipmi"}}},
		Nodes: []*Node{{ID: 1, UUID: "u1", Driver: "ipmi", ConductorGroup: "g",
			ResourceClass: sp("bm"), ProvisionState: sp("available")}},
		SchemaRevision: steinRevision,
		NodeRead:       NodeReadFull,
	}
	if diff := cmp.Diff(want, got, timeCmp); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
}

// TestConnectForms connects with the DSN forms an operator may copy from
// ironic.conf, including a role whose name and password need percent-encoding
// and that has nothing but SELECT on the three tables.
func TestConnectForms(t *testing.T) {
	needPG(t)
	loadFixture(t)
	admin := testDBConn(t, testDBName)
	role := "ice ro@" + itoa(closedPort(t))
	qrole := `"` + role + `"`
	mustExec(t, admin,
		`CREATE ROLE `+qrole+` LOGIN PASSWORD 'p@ss:w/rd%'`,
		`GRANT SELECT ON conductors, conductor_hardware_interfaces, nodes, alembic_version TO `+qrole)
	t.Cleanup(func() {
		mustExec(t, admin, `REVOKE ALL ON conductors, conductor_hardware_interfaces, nodes, alembic_version FROM `+qrole, `DROP ROLE `+qrole)
	})
	encRole := strings.NewReplacer(" ", "%20", "@", "%40").Replace(role)
	for _, dsn := range []string{
		testDSN,
		"postgresql://" + encRole + ":p%40ss%3Aw%2Frd%25@127.0.0.1:5432/" + testDBName + "?sslmode=disable&application_name=ice-test&client_encoding=utf8",
		"postgres://" + encRole + ":p%40ss%3Aw%2Frd%25@127.0.0.1/" + testDBName + "?connect_timeout=5",
		"postgresql+psycopg2://" + encRole + "@/" + testDBName, // default unix socket
		"postgresql+psycopg2://" + encRole + ":pw@/" + testDBName + "?host=/var/run/postgresql",
		"postgresql://" + encRole + "@localhost,127.0.0.1:5432/" + testDBName,
		"host=/var/run/postgresql dbname=" + testDBName + " user='" + role + "' password='p@ss:w/rd%'",
		"host=127.0.0.1 port=5432 dbname=" + testDBName + " user='" + role + "' sslmode=require",
	} {
		t.Run(dbconn.Redact(dsn), func(t *testing.T) {
			d := openTest(t, dsn, dbconn.Options{QueryTimeout: 5 * time.Second})
			snapshotIsFixture(t, d, rules.PostgreSQL)
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// checkTimedOut checks a snapshot that a lock held past the query timeout:
// it failed after about the timeout with an error naming the query
// (prefix want) that is a DeadlineExceeded, and the next snapshot, once the
// lock is gone, works.
func checkTimedOut(t *testing.T, d *DB, err error, elapsed, timeout time.Duration, want string) {
	t.Helper()
	if err == nil {
		t.Fatal("snapshot succeeded through a lock")
	}
	t.Logf("error after %s: %v", elapsed.Round(time.Millisecond), err)
	// The error gives the time the step really took: at least the
	// deadline, at most the whole snapshot.
	const after = "timed out after "
	prefix, _, _ := strings.Cut(want, after)
	msg, ok := strings.CutPrefix(err.Error(), prefix+after)
	if !ok {
		t.Fatalf("error %q, want prefix %q", err, prefix+after)
	}
	took, perr := time.ParseDuration(strings.FieldsFunc(msg, func(r rune) bool { return r == ' ' || r == ':' })[0])
	if perr != nil || took < timeout || took > elapsed+time.Millisecond {
		t.Errorf("error %q: says %s (%v), want between the deadline %s and the snapshot's %s", err, took, perr, timeout, elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false", err)
	}
	if elapsed < timeout || elapsed > timeout+2*time.Second {
		t.Errorf("snapshot took %s with a %s query timeout", elapsed, timeout)
	}
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Errorf("snapshot after the lock was released: %v", err)
	}
}

// TestSnapshotNotIronic: a database without Ironic's tables is told apart
// from a transient failure (ErrNotIronic), on every backend; a server that
// is down is not.
func TestSnapshotNotIronic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		for _, table := range []string{"conductors", "nodes"} {
			conn := b.admin(t)
			b.reset(t, conn)
			b.exec(t, conn, "ALTER TABLE "+table+" RENAME TO "+table+"_elsewhere")
			_, err := openTest(t, b.dsn, dbconn.Options{}).Snapshot(context.Background())
			b.exec(t, conn, "ALTER TABLE "+table+"_elsewhere RENAME TO "+table)
			if !errors.Is(err, ErrNotIronic) || !strings.Contains(err.Error(), "is this Ironic's database") {
				t.Errorf("no %s table: %v, want ErrNotIronic", table, err)
			}
		}
		// a column it reads missing: the same (dbconn.NoSuchRelation)
		conn := b.admin(t)
		b.reset(t, conn)
		b.exec(t, conn, "ALTER TABLE conductors RENAME COLUMN hostname TO hostname_elsewhere")
		_, err := openTest(t, b.dsn, dbconn.Options{}).Snapshot(context.Background())
		b.exec(t, conn, "ALTER TABLE conductors RENAME COLUMN hostname_elsewhere TO hostname")
		if !errors.Is(err, ErrNotIronic) || dbconn.ErrorKind(err) != dbconn.KindSchema {
			t.Errorf("no conductors.hostname: %v (kind %q), want ErrNotIronic of kind schema", err, dbconn.ErrorKind(err))
		}
	})
	d := openTest(t, "postgresql://postgres@127.0.0.1:1/x?connect_timeout=2", dbconn.Options{QueryTimeout: 2 * time.Second})
	if _, err := d.Snapshot(context.Background()); err == nil || errors.Is(err, ErrNotIronic) {
		t.Errorf("server down: %v, want a transient error", err)
	}
}
