package db

import (
	"context"
	"sync/atomic"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// Backend names the kind of SQL server behind Ironic's [database]connection
// (see dbconn.Backend).
type Backend = dbconn.Backend

// The backends the exporter knows.
const (
	BackendPostgreSQL = dbconn.BackendPostgreSQL
	BackendMySQL      = dbconn.BackendMySQL
	BackendSQLite     = dbconn.BackendSQLite
)

// DB reads snapshots of Ironic's database through the exporter's one
// connection pool to it, whose String, Backend, IgnoredOptions and Close
// are the DB's. It is safe for concurrent use and lives as long as the
// process.
type DB struct {
	*dbconn.Pool
	// rawText: read PostgreSQL text columns as bytes (a SQL_ASCII
	// database with non-UTF-8 text, see Snapshot).
	rawText atomic.Bool
	// lastNodeRead is the probe and the row problems of the last node read
	// (full or delta): the problems are given again with a snapshot that
	// skips reading the unchanged nodes, and a delta read is made only over
	// the nodes of a read without problems (see readDelta).
	lastNodeRead atomic.Pointer[nodeRead]
	// gen is the generation of the nodes table the node reads are worded
	// for (a schemaGen), read by the first snapshot (nodesGeneration); -1
	// until then.
	gen atomic.Int32
	// hook, when a test sets it, runs inside the snapshot transaction after
	// BEGIN ("begin") and after each query ("conductors", "hardware types",
	// "nodes", "changed nodes", "node ids"). An error from it aborts the
	// snapshot.
	hook func(ctx context.Context, stage string, tx *sqlx.Tx) error
}

// Open sets up the pool to Ironic's database from dsn, its
// [database]connection, as dbconn.Open does: without connecting, and with
// errors that never contain the password.
func Open(dsn string, opts dbconn.Options) (*DB, error) {
	pool, err := dbconn.Open(dsn, opts)
	if err != nil {
		return nil, err
	}
	d := &DB{Pool: pool}
	d.gen.Store(-1)
	return d, nil
}

// runHook runs the test hook at stage, if one is set.
func (d *DB) runHook(s *dbconn.Session, stage string) error {
	if d.hook == nil {
		return nil
	}
	return d.hook(s.Context(), stage, s.Tx())
}
