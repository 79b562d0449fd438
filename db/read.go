package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
)

// The snapshot queries. They name only columns that exist since Ironic Rocky
// (alembic revision 664f85c2f622 added conductor_group to both tables), are
// plain SQL that PostgreSQL, MySQL and SQLite all accept, and sort by the
// primary key, as Ironic's list calls do by default.
const (
	// SQLConductors reads the conductors table.
	SQLConductors = `SELECT id, hostname, conductor_group, online, drivers, created_at, updated_at
FROM conductors
ORDER BY id`

	// SQLHardwareTypes reads the distinct hardware types each conductor
	// registered; conductor_hardware_interfaces has one row per
	// (conductor, hardware type, interface type, interface).
	SQLHardwareTypes = `SELECT DISTINCT conductor_id, hardware_type
FROM conductor_hardware_interfaces
ORDER BY conductor_id, hardware_type`

	// SQLNodes reads the nodes table.
	SQLNodes = `SELECT id, uuid, name, driver, conductor_group, reservation, instance_uuid,
       power_state, provision_state, maintenance, resource_class, created_at, updated_at
FROM nodes
ORDER BY id`
)

// testHook, when set by a test, runs inside the snapshot transaction after
// BEGIN ("begin") and after each query ("conductors", "hardware types",
// "nodes"). An error from it aborts the snapshot.
var testHook func(ctx context.Context, stage string, tx *sqlx.Tx) error

func runHook(ctx context.Context, stage string, tx *sqlx.Tx) error {
	if testHook == nil {
		return nil
	}
	return testHook(ctx, stage, tx)
}

// Snapshot reads conductors, their hardware types and nodes in one read-only
// REPEATABLE READ transaction, so that the three agree. Getting a connection
// and each query have their own deadline of QueryTimeout; ctx bounds the
// whole. A row that cannot be decoded does not fail the snapshot: it is kept
// as well as possible and described in Snapshot.Warnings. Errors say which
// step failed and never contain the password.
func (d *DB) Snapshot(ctx context.Context) (*Snapshot, error) {
	s, err := d.snapshot(ctx)
	return s, d.scrub(err)
}

func (d *DB) snapshot(ctx context.Context) (_ *Snapshot, err error) {
	cctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	conn, err := d.db.Connx(cctx)
	cancel()
	if err != nil {
		return nil, stepError("connecting to database", cctx, d.opts.QueryTimeout, err)
	}
	defer conn.Close()

	// The transaction's context bounds BEGIN and guards against a stuck
	// step: four steps of QueryTimeout at most.
	tctx, cancel := context.WithTimeout(ctx, 4*d.opts.QueryTimeout)
	defer cancel()
	tx, err := conn.BeginTxx(tctx, d.dialect.txOptions())
	if err != nil {
		return nil, stepError("starting read-only transaction", tctx, d.opts.QueryTimeout, err)
	}
	// Read-only: rolling back is all there is to end it.
	defer tx.Rollback() //nolint:errcheck
	if err := runHook(tctx, "begin", tx); err != nil {
		return nil, err
	}

	snap := &Snapshot{Backend: d.dialect.backend()}
	if snap.Conductors, snap.Warnings, err = d.readConductors(tctx, tx); err != nil {
		return nil, err
	}
	if err := runHook(tctx, "conductors", tx); err != nil {
		return nil, err
	}
	if err := d.readHardwareTypes(tctx, tx, snap.Conductors); err != nil {
		return nil, err
	}
	if err := runHook(tctx, "hardware types", tx); err != nil {
		return nil, err
	}
	if snap.Nodes, err = d.readNodes(tctx, tx); err != nil {
		return nil, err
	}
	if err := runHook(tctx, "nodes", tx); err != nil {
		return nil, err
	}
	d.lastNodes.Store(int64(len(snap.Nodes)))
	return snap, nil
}

// stepError wraps err with the step and, when the step's deadline expired,
// says so (errors.Is(err, context.DeadlineExceeded) holds then).
func stepError(step string, ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: timed out after %s: %w", step, timeout, err)
		}
		return fmt.Errorf("%s: timed out after %s (%w): %w", step, timeout, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s: %w", step, err)
}

func (d *DB) readConductors(ctx context.Context, tx *sqlx.Tx) (_ []Conductor, warnings []string, err error) {
	const step = "reading conductors"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, SQLConductors)
	if err != nil {
		return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	defer rows.Close()

	var out []Conductor
	for rows.Next() {
		var (
			c                Conductor
			online           sql.NullBool
			drivers          sql.NullString
			created, updated sql.NullTime
			hostname, cgroup string
			id               int64
		)
		if err := rows.Scan(&id, &hostname, &cgroup, &online, &drivers, &created, &updated); err != nil {
			return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
		}
		c.ID, c.Hostname, c.ConductorGroup = id, hostname, cgroup
		c.Online = online.Valid && online.Bool
		c.CreatedAt, c.UpdatedAt = wallUTC(created), wallUTC(updated)
		if drivers.Valid {
			if err := json.Unmarshal([]byte(drivers.String), &c.Drivers); err != nil {
				c.Drivers = nil
				warnings = append(warnings, fmt.Sprintf(
					"conductor %q (id %d): drivers column is not a JSON list of strings, read as empty: %v",
					c.Hostname, c.ID, err))
			}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	return out, warnings, nil
}

// readHardwareTypes fills HardwareTypes of conductors (ordered by ID).
func (d *DB) readHardwareTypes(ctx context.Context, tx *sqlx.Tx, conductors []Conductor) error {
	const step = "reading conductor hardware types"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, SQLHardwareTypes)
	if err != nil {
		return stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	defer rows.Close()

	for rows.Next() {
		var (
			id int64
			ht string
		)
		if err := rows.Scan(&id, &ht); err != nil {
			return stepError(step, ctx, d.opts.QueryTimeout, err)
		}
		// Rows of a conductor the snapshot does not have cannot exist (a
		// foreign key, the same transaction); skip them if they do.
		if i, ok := slices.BinarySearchFunc(conductors, id, func(c Conductor, id int64) int {
			return cmpInt64(c.ID, id)
		}); ok {
			conductors[i].HardwareTypes = append(conductors[i].HardwareTypes, ht)
		}
	}
	if err := rows.Err(); err != nil {
		return stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	// The server sorts by its collation; the snapshot promises byte order.
	for i := range conductors {
		slices.Sort(conductors[i].HardwareTypes)
		conductors[i].HardwareTypes = slices.Compact(conductors[i].HardwareTypes)
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (d *DB) readNodes(ctx context.Context, tx *sqlx.Tx) ([]Node, error) {
	const step = "reading nodes"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, SQLNodes)
	if err != nil {
		return nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	defer rows.Close()

	out := make([]Node, 0, d.lastNodes.Load())
	var (
		in   = interner{}
		slab stringSlab
		// Scan targets, reused across rows.
		id                                        int64
		uuid, name, driver, reservation, instance sql.NullString
		power, provision, resourceClass           sql.NullString
		cgroup                                    string
		maintenance                               sql.NullBool
		created, updated                          sql.NullTime
	)
	for rows.Next() {
		if err := rows.Scan(&id, &uuid, &name, &driver, &cgroup, &reservation, &instance,
			&power, &provision, &maintenance, &resourceClass, &created, &updated); err != nil {
			return nil, stepError(step, ctx, d.opts.QueryTimeout, err)
		}
		out = append(out, Node{
			ID:             id,
			UUID:           uuid.String, // NULL (never in practice) reads as ""
			Name:           slab.ptr(name),
			Driver:         in.str(driver.String),
			ConductorGroup: in.str(cgroup),
			Reservation:    slab.ptr(in.nullable(reservation)),
			InstanceUUID:   slab.ptr(instance),
			PowerState:     slab.ptr(in.nullable(power)),
			ProvisionState: slab.ptr(in.nullable(provision)),
			Maintenance:    maintenance.Valid && maintenance.Bool,
			ResourceClass:  slab.ptr(in.nullable(resourceClass)),
			CreatedAt:      wallUTC(created),
			UpdatedAt:      wallUTC(updated),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	return out, nil
}

// wallUTC returns the stored wall-clock time in time.UTC. Ironic stores naive
// UTC; drivers tag such values with a zone of their own (lib/pq: a nameless
// fixed zone; MySQL: the loc parameter), which must not shift them.
func wallUTC(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	y, mo, d := t.Time.Date()
	h, mi, s := t.Time.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Time.Nanosecond(), time.UTC)
}

// interner shares the memory of the few distinct values of low-cardinality
// columns (driver, group, states, resource class, reservation) across the
// nodes of one snapshot, which the collector keeps.
type interner map[string]string

func (in interner) str(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	in[s] = s
	return s
}

func (in interner) nullable(s sql.NullString) sql.NullString {
	if s.Valid {
		s.String = in.str(s.String)
	}
	return s
}

// stringSlab hands out *string from chunks, one allocation per chunk rather
// than one per nullable column of each node.
type stringSlab struct{ chunk []string }

const slabChunk = 1024

func (s *stringSlab) ptr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	if len(s.chunk) == cap(s.chunk) {
		s.chunk = make([]string, 0, slabChunk)
	}
	s.chunk = append(s.chunk, v.String)
	return &s.chunk[len(s.chunk)-1]
}
