package db

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

func TestMySQLSession(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	d := openTest(t, mysqlDSN, dbconn.Options{})
	var checked bool
	setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
		if stage != "begin" {
			return nil
		}
		checked = true
		var iso, tz, epoch string
		var ro int
		if err := tx.QueryRowxContext(ctx, `SELECT @@session.tx_isolation, @@session.tx_read_only, @@session.time_zone,
			CAST(FROM_UNIXTIME(0) AS CHAR)`).Scan(&iso, &ro, &tz, &epoch); err != nil {
			return err
		}
		if iso != "REPEATABLE-READ" || ro != 1 || tz != "+00:00" || epoch != "1970-01-01 00:00:00" {
			t.Errorf("session: isolation %q read_only %d time_zone %q FROM_UNIXTIME(0) %q", iso, ro, tz, epoch)
		}
		_, err := tx.ExecContext(ctx, `UPDATE nodes SET maintenance = 0`)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1792 { // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
			t.Errorf("write in the snapshot transaction: err = %v, want error 1792", err)
		}
		return nil
	})
	writeRefused(t, d, &checked, mysqlBackend.admin(t))
}

// TestMySQLConsistentSnapshot commits a change after START TRANSACTION and
// before the first SELECT: WITH CONSISTENT SNAPSHOT takes the read view at
// START, so the snapshot must not see it (a plain START TRANSACTION would).
func TestMySQLConsistentSnapshot(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	admin := mysqlBackend.admin(t)
	d := openTest(t, mysqlDSN, dbconn.Options{})
	setHook(d, func(ctx context.Context, stage string, tx *sqlx.Tx) error {
		if stage == "begin" {
			mustExec(t, admin, `UPDATE conductors SET online = 0 WHERE id = 1`,
				`INSERT INTO nodes (id, uuid, driver) VALUES (98, 'early', 'ipmi')`)
		}
		return nil
	})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantFor(rules.MySQL), got, timeCmp); diff != "" {
		t.Errorf("snapshot saw a change committed after START TRANSACTION (-want +got):\n%s", diff)
	}
}

// TestMySQLTimeZones: neither a non-UTC global time_zone, nor the Go
// process' TZ, nor the server's system zone shifts a DATETIME.
func TestMySQLTimeZones(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	admin := myConn(t, "")
	var old string
	if err := admin.QueryRow(`SELECT @@global.time_zone`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, `SET GLOBAL time_zone = '-03:30'`)
	t.Cleanup(func() { mustExec(t, admin, `SET GLOBAL time_zone = '`+old+`'`) })
	if time.Local.String() != goTZ {
		t.Fatalf("time.Local is %s, want %s", time.Local, goTZ)
	}
	d := openTest(t, mysqlDSN, dbconn.Options{})
	snapshotIsFixture(t, d, rules.MySQL)
}

// TestMySQLBooleans: TINYINT(1) holds any small integer; like SQLAlchemy
// and MySQL's IS TRUE, every non-zero value is true.
func TestMySQLBooleans(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	mustExec(t, mysqlBackend.admin(t), `UPDATE conductors SET online = 2 WHERE id = 2`,
		`UPDATE nodes SET maintenance = -1 WHERE id = 10`)
	d := openTest(t, mysqlDSN, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Conductors[1].Online || !got.Nodes[2].Maintenance {
		t.Errorf("online=2 read as %v, maintenance=-1 read as %v", got.Conductors[1].Online, got.Nodes[2].Maintenance)
	}
}

// TestMySQLQueryTimeout holds a table's metadata lock (LOCK TABLES ...
// WRITE) from another connection: the SELECT that needs it must fail at its
// deadline, saying which query, and the pool must work again afterwards.
func TestMySQLQueryTimeout(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	admin := mysqlBackend.admin(t)
	const timeout = 300 * time.Millisecond
	d := openTest(t, mysqlDSN, dbconn.Options{QueryTimeout: timeout})
	for _, tc := range []struct{ table, want string }{
		{"nodes", "reading the nodes columns: timed out after 300ms"}, // the first snapshot's first statement on the table
		{"conductors", "reading conductors: timed out after 300ms"},
		{"conductor_hardware_interfaces", "reading conductor hardware types: timed out after 300ms"},
	} {
		t.Run(tc.table, func(t *testing.T) {
			ctx := context.Background()
			lock, err := admin.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if _, err := lock.ExecContext(ctx, `LOCK TABLES `+tc.table+` WRITE`); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = d.Snapshot(ctx)
			elapsed := time.Since(start)
			if _, err := lock.ExecContext(ctx, `UNLOCK TABLES`); err != nil {
				t.Fatal(err)
			}
			checkTimedOut(t, d, err, elapsed, timeout, tc.want)
		})
	}
}

// TestMySQLConnectForms connects with the URL forms an operator may copy
// from ironic.conf, as a user whose name and password need percent-encoding
// and that has nothing but SELECT on the three tables.
func TestMySQLConnectForms(t *testing.T) {
	needMySQL(t)
	loadFixtureOn(t, mysqlBackend)
	admin := myConn(t, "")
	user := "ice ro@" + itoa(closedPort(t)%10000)
	const pass = "p@ss:w/rd%"
	createMySQLReader(t, admin, user, pass)
	encUser := strings.NewReplacer(" ", "%20", "@", "%40").Replace(user)
	encPass := "p%40ss%3Aw%2Frd%25"
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(cnf, []byte("[ironic]\nuser = "+user+"\npassword = '"+pass+"'\nhost = 127.0.0.1\nport = 3306\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{
		mysqlDSN,
		"mysql+pymysql://" + encUser + ":" + encPass + "@127.0.0.1/" + mysqlDBName + "?charset=utf8&plugin=dbcounter",
		"mysql+pymysql://" + encUser + ":" + encPass + "@localhost:3306/" + mysqlDBName,
		"mysql://" + encUser + ":" + encPass + "@localhost/" + mysqlDBName + "?charset=utf8mb4", // mysqlclient: socket
		"mysql+pymysql://" + encUser + ":" + encPass + "@/" + mysqlDBName + "?unix_socket=" + "/run/mysqld/mysqld.sock",
		"mariadb+pymysql://" + encUser + ":" + encPass + "@127.0.0.1:3306/" + mysqlDBName + "?connect_timeout=5",
		"mysql+pymysql:///" + mysqlDBName + "?read_default_file=" + cnf + "&read_default_group=ironic",
	} {
		t.Run(dbconn.Redact(dsn), func(t *testing.T) {
			d := openTest(t, dsn, dbconn.Options{QueryTimeout: 5 * time.Second})
			snapshotIsFixture(t, d, rules.MySQL)
		})
	}
}

// createMySQLReader creates user (at 127.0.0.1 and localhost) with
// nothing but SELECT on GrantTables of the test database, dropped
// after the test.
func createMySQLReader(t *testing.T, admin *sql.DB, user, pass string) {
	t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	for _, host := range []string{"127.0.0.1", "localhost"} {
		acct := q(user) + "@" + q(host)
		mustExec(t, admin, `CREATE USER `+acct+` IDENTIFIED BY `+q(pass))
		for _, table := range GrantTables {
			mustExec(t, admin, `GRANT SELECT ON `+mysqlDBName+`.`+table+` TO `+acct)
		}
		t.Cleanup(func() { mustExec(t, admin, `DROP USER `+acct) })
	}
}
