// Package testenv gives the tests of the binary what they share: the built
// exporter, and a PostgreSQL database holding the schema Ironic's own
// migrations create (scripts/ironic-schema.sh, Debian python3-ironic), and
// the dependencies of the tests (Need): a test whose dependency is missing
// skips with one line saying what to install, or fails under
// ICE_TEST_REQUIRE_ALL=1 (make test, CI).
//
// Environment:
//
//	ICE_TEST_PG      libpq key=value DSN of a superuser connection (default
//	                 host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable)
//	ICE_TEST_PG_URL  the same server as a SQLAlchemy URL prefix, without the
//	                 database (default postgresql+psycopg2://postgres@127.0.0.1:5432)
package testenv

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/lib/pq" // the PostgreSQL driver
)

var (
	adminDSN = EnvOr("ICE_TEST_PG", "host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable")
	adminURL = EnvOr("ICE_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")
)

// EnvOr returns the environment variable k, or def when it is unset or
// empty: the tests' addresses and DSNs of the services they need.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// ModuleRoot returns the directory holding the project's go.mod, found
// from the working directory up: where the tests and the generators
// (mixin/generate) find the repository's files.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// IronicDB is a PostgreSQL database with Ironic's schema, made for one test
// binary and dropped by Drop.
type IronicDB struct {
	// Name is the database's name.
	Name string
}

// NewIronicDB creates a database named prefix_PID and runs Ironic's
// migrations in it.
func NewIronicDB(prefix string) (*IronicDB, error) {
	admin, err := sql.Open("postgres", adminDSN)
	if err != nil {
		return nil, err
	}
	defer func() { _ = admin.Close() }()
	d := &IronicDB{Name: fmt.Sprintf("%s_%d", prefix, os.Getpid())}
	if _, err := admin.Exec("CREATE DATABASE " + d.Name); err != nil {
		return nil, fmt.Errorf("creating database (is PostgreSQL running on 127.0.0.1:5432?): %w", err)
	}
	root, err := ModuleRoot()
	if err == nil {
		cmd := exec.Command(filepath.Join(root, "scripts", "ironic-schema.sh"), adminURL+"/"+d.Name)
		cmd.Env = PythonEnv()
		out, runErr := cmd.CombinedOutput()
		if runErr != nil {
			err = fmt.Errorf("ironic's migrations (needs Debian python3-ironic and python3-psycopg2): %w\n%s", runErr, out)
		}
	}
	if err != nil {
		d.Drop()
		return nil, err
	}
	return d, nil
}

// Drop removes the database, closing any connection still open to it.
func (d *IronicDB) Drop() {
	if admin, err := sql.Open("postgres", adminDSN); err == nil {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + d.Name + " WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: dropping %s: %v\n", d.Name, err)
		}
		_ = admin.Close()
	}
}

// Open connects to the database as the superuser, for fixtures.
func (d *IronicDB) Open() (*sql.DB, error) {
	return sql.Open("postgres", strings.Replace(adminDSN, "dbname=postgres", "dbname="+d.Name, 1))
}

// DB opens the database as Open does, failing t on error, and closes it in
// t's cleanup.
func (d *IronicDB) DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Setup is the common start of a TestMain: it builds the exporter into a
// temporary directory and, when PostgreSQL and python3-ironic are there
// (plus the deps given), creates an Ironic database named after prefix
// (see NewIronicDB). It returns the binary's path, the database (nil when
// a dependency is missing), the Gate that tests needing the database
// Check, and a cleanup that drops the database and removes the directory,
// to be called after m.Run. err is for failures that are not a missing
// dependency.
func Setup(prefix string, deps ...Dep) (bin string, db *IronicDB, gate *Gate, cleanup func(), err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", nil, nil, nil, err
	}
	dir, err := os.MkdirTemp("", prefix+"_bin_")
	if err != nil {
		return "", nil, nil, nil, err
	}
	rm := func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, "ironic_conductor_exporter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ironic_conductor_exporter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		rm()
		return "", nil, nil, nil, fmt.Errorf("building the exporter: %w\n%s", err, out)
	}
	gate = &Gate{Err: Missing(append([]Dep{PostgreSQL, IronicPython}, deps...)...)}
	if gate.Err != nil {
		return bin, nil, gate, rm, nil
	}
	if db, err = NewIronicDB(prefix); err != nil {
		rm()
		return "", nil, nil, nil, err
	}
	return bin, db, gate, func() { db.Drop(); rm() }, nil
}

// MiniSchemaPostgreSQL is the smallest PostgreSQL schema the exporter reads
// as Ironic's (the columns of the conductors, conductor_hardware_interfaces
// and nodes tables it selects), for tests that need rows Ironic's own
// migrations and DB API would never write (a SQL_ASCII database holding
// bytes that are not UTF-8, say). Tests of Ironic's behaviour use its real
// schema instead.
var MiniSchemaPostgreSQL = []string{
	`CREATE TABLE conductors (id serial PRIMARY KEY, hostname varchar(255) NOT NULL, conductor_group varchar(255),
			online boolean, drivers text, created_at timestamp, updated_at timestamp, version varchar(15))`,
	`CREATE TABLE conductor_hardware_interfaces (conductor_id int, hardware_type varchar(255))`,
	`CREATE TABLE nodes (id serial PRIMARY KEY, uuid varchar(36), name varchar(255), driver varchar(255),
			conductor_group varchar(255), reservation varchar(255), instance_uuid varchar(36), power_state varchar(15),
			provision_state varchar(15), maintenance boolean, resource_class varchar(80), created_at timestamp, updated_at timestamp,
			conductor_affinity int, target_provision_state varchar(15), owner varchar(255), lessee varchar(255),
			fault varchar(255))`,
}
