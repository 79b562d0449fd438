package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
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

// The snapshot queries (with SQLConductors and SQLNodes, worded from their
// column lists in columns.go). They name only columns that exist since
// Ironic Rocky (alembic revision 664f85c2f622 added conductor_group to both
// tables; nodes.conductor_affinity and target_provision_state are older
// still), or read NULL for those a schema lacks (schemaGen), are
// plain SQL that PostgreSQL, MySQL and SQLite all accept, and sort by the
// primary key, as Ironic's list calls do by default. A dialect may adapt them
// (see queries): MySQL compares strings by a case-insensitive collation,
// SQLite hands timestamps over as text.
const (
	// SQLHardwareTypes reads the distinct hardware types each conductor
	// registered; conductor_hardware_interfaces has one row per
	// (conductor, hardware type, interface type, interface).
	SQLHardwareTypes = `SELECT DISTINCT conductor_id, hardware_type
FROM conductor_hardware_interfaces
ORDER BY conductor_id, hardware_type`

	// SQLSchemaRevision reads the alembic revision the schema was migrated
	// to (or stamped with, by create_schema on SQLite): it tells which Ironic
	// release wrote the database. A database without the table reads as no
	// revision.
	SQLSchemaRevision = `SELECT version_num FROM alembic_version ORDER BY version_num`

	// SQLNodeColumns returns no row, only the nodes table's columns, which
	// tell the generation of its schema (schemaGen).
	SQLNodeColumns = `SELECT * FROM nodes LIMIT 0`
)

// ErrNotIronic is in the chain of a snapshot error when the database lacks
// a table or column the snapshot reads (dbconn.NoSuchRelation): it is not
// Ironic's database (or Ironic's schema was never created), a permanent
// problem that retrying will not fix, unlike a lost connection or a
// timeout.
var ErrNotIronic = errors.New("not Ironic's database")

// notIronic marks with ErrNotIronic the server saying a table or column
// does not exist (dbconn.NoSuchRelation).
func notIronic(err error) error {
	if dbconn.NoSuchRelation(err) {
		return fmt.Errorf("%w (no such table or column: is this Ironic's database, with its schema?): %w", ErrNotIronic, err)
	}
	return err
}

// Snapshot reads conductors, their hardware types and nodes in one read-only
// REPEATABLE READ transaction, so that the three agree, each step under its
// deadline (dbconn.Pool.Begin). A connection the server closed while it sat
// idle in the pool (pg_terminate_backend, idle_session_timeout, wait_timeout,
// a fail-over) is retried once on a new one. A row that cannot be decoded
// does not fail the snapshot: it is kept as well as possible and described in
// Snapshot.Warnings and WarningCounts. Errors say which step failed after how
// long, and never contain the password.
func (d *DB) Snapshot(ctx context.Context) (*Snapshot, error) {
	return d.snapshotRetrying(ctx, since{})
}

// since is what a snapshot may spare of the node read.
type since struct {
	// probe, when not nil, spares the node read while the probe equals it.
	probe *NodeProbe
	// delta, when not nil, has the nodes of probe: when the probe differs,
	// only the rows that may have changed are read and merged into them
	// (SnapshotChanges).
	delta *Known
}

// snapshotRetrying reads a snapshot (its nodes only as known allows, see
// SnapshotChanges), switching to raw text on a SQL_ASCII database and
// retrying once on a connection the server closed.
func (d *DB) snapshotRetrying(ctx context.Context, known since) (*Snapshot, error) {
	s, err := d.snapshot(ctx, known)
	if err != nil && ctx.Err() == nil && d.Backend() == rules.PostgreSQL && isInvalidEncoding(err) && !d.rawText.Load() {
		// A SQL_ASCII database holding bytes that are not UTF-8: the
		// server refuses to send them as UTF-8 text. Read the text
		// columns as bytes from now on; the reader checks them.
		d.rawText.Store(true)
		s, err = d.snapshot(ctx, known)
	}
	if err != nil && ctx.Err() == nil && dbconn.Retryable(err) {
		s, err = d.snapshot(ctx, known)
		if err != nil {
			err = fmt.Errorf("%w (after retrying on a new connection)", err)
		}
	}
	return s, d.Scrub(err)
}

// nodesGeneration is the newest generation of the nodes table (schemaGen)
// whose columns the schema all has, from the columns SQLNodeColumns names:
// an older schema is read without a statement that fails (which would fill
// the server's log with an error at every start). A schema without a
// column of Rocky's reads as Rocky's: the node read then fails naming it.
func nodesGeneration(s *dbconn.Session) (schemaGen, error) {
	var names []string
	err := s.Step("reading the nodes columns", func(ctx context.Context, tx *sqlx.Tx) error {
		rows, err := tx.QueryContext(ctx, SQLNodeColumns)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		if names, err = rows.Columns(); err != nil {
			return err
		}
		return rows.Close()
	})
	if err != nil {
		return 0, err
	}
	has := map[string]bool{}
	for _, n := range names {
		has[strings.ToLower(n)] = true
	}
	gen := schemaGens - 1
	for _, c := range nodeColumns {
		if !has[c.name] && c.since <= gen {
			gen = max(c.since-1, genRocky)
		}
	}
	return gen, nil
}

func (d *DB) snapshot(ctx context.Context, known since) (_ *Snapshot, err error) {
	// The transaction's context bounds BEGIN and guards against a stuck
	// step: four steps of QueryTimeout at most.
	s, err := d.Begin(ctx, 4)
	if err != nil {
		return nil, err
	}
	defer func() { s.End(err != nil) }()
	if err := d.runHook(s, "begin"); err != nil {
		return nil, err
	}

	snap := &Snapshot{Backend: d.Backend()}
	w := &warner{}
	q := queriesFor(d.Backend())
	if d.rawText.Load() {
		q = &pgRawTextQueries
	}
	if snap.Conductors, err = d.readConductors(s, q.conductors, w); err != nil {
		return nil, notIronic(err)
	}
	if err := d.runHook(s, "conductors"); err != nil {
		return nil, err
	}
	if err := d.readHardwareTypes(s, q.hardwareTypes, snap.Conductors, w); err != nil {
		return nil, notIronic(err)
	}
	if err := d.runHook(s, "hardware types"); err != nil {
		return nil, err
	}
	gen := d.gen.Load()
	if gen < 0 {
		g, err := nodesGeneration(s)
		if err != nil {
			return nil, notIronic(err)
		}
		gen = int32(g)
		d.gen.Store(gen)
	}
	nodesQuery, changedQuery := q.nodes[gen], q.changedNodes[gen]
	if snap.NodeProbe, err = d.probeNodes(s, q.probe); err != nil {
		return nil, notIronic(err)
	}
	snap.NodeRead = NodeReadFull
	if known.probe != nil && *known.probe == snap.NodeProbe {
		snap.NodeRead = NodeReadSkipped
		// The probe does not see a column renamed or dropped under the
		// exporter: the node read itself, with no row, proves it would
		// still work (the server only plans it).
		err := s.Rows("checking the nodes columns", nodesQuery+"\nLIMIT 0", false, func(*sql.Rows) error { return nil })
		if err != nil {
			return nil, notIronic(err)
		}
		if last := d.lastNodeRead.Load(); last != nil {
			w.addNodes(last.warnings) // the nodes the cache reuses still have them
		}
	} else {
		var delta bool
		if known.delta != nil {
			if snap.Nodes, delta, err = d.readDelta(s, changedQuery, q.binaryNodes, known.delta, snap.NodeProbe); err != nil {
				return nil, notIronic(err)
			}
		}
		if delta {
			snap.NodeRead = NodeReadDelta
		} else {
			if snap.Nodes, err = d.readNodes(s, nodesQuery, q.binaryNodes, snap.NodeProbe, w); err != nil {
				return nil, notIronic(err)
			}
			if err := d.runHook(s, "nodes"); err != nil {
				return nil, err
			}
		}
	}
	// The schema revision last: on PostgreSQL a missing table aborts the
	// transaction.
	rev, warning, err := d.readSchemaRevision(s)
	if err != nil {
		return nil, err
	}
	snap.SchemaRevision = rev
	snap.Warnings, snap.WarningCounts = w.result()
	if warning != "" {
		snap.Warnings = append(snap.Warnings, warning)
	}
	return snap, nil
}
