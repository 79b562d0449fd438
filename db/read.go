package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// The snapshot queries. They name only columns that exist since Ironic Rocky
// (alembic revision 664f85c2f622 added conductor_group to both tables), are
// plain SQL that PostgreSQL, MySQL and SQLite all accept, and sort by the
// primary key, as Ironic's list calls do by default. A dialect may adapt them
// (see queries): MySQL compares strings by a case-insensitive collation,
// SQLite hands timestamps over as text.
const (
	// SQLConductors reads the conductors table.
	SQLConductors = `SELECT id, hostname, conductor_group, online, drivers, created_at, updated_at, version
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

	// SQLSchemaRevision reads the alembic revision the schema was migrated
	// to (or stamped with, by create_schema on SQLite): it tells which Ironic
	// release wrote the database. A database without the table reads as no
	// revision.
	SQLSchemaRevision = `SELECT version_num FROM alembic_version ORDER BY version_num`
)

// queries are the three statements of a snapshot, as a dialect words them.
// Their columns are those of SQLConductors, SQLHardwareTypes and SQLNodes, in
// that order; a timestamp column may come as a time or as SQLAlchemy's text
// form, a boolean as a boolean or an integer, and the hardware types need not
// be distinct (the reader deduplicates them byte-wise).
type queries struct {
	conductors, hardwareTypes, nodes string
}

// standardQueries are the statements as written above (PostgreSQL).
var standardQueries = queries{conductors: SQLConductors, hardwareTypes: SQLHardwareTypes, nodes: SQLNodes}

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
	q := d.dialect.queries()
	if snap.Conductors, snap.Warnings, err = d.readConductors(tctx, tx, q.conductors); err != nil {
		return nil, err
	}
	if err := runHook(tctx, "conductors", tx); err != nil {
		return nil, err
	}
	if err := d.readHardwareTypes(tctx, tx, q.hardwareTypes, snap.Conductors); err != nil {
		return nil, err
	}
	if err := runHook(tctx, "hardware types", tx); err != nil {
		return nil, err
	}
	var nodeWarnings []string
	if snap.Nodes, nodeWarnings, err = d.readNodes(tctx, tx, q.nodes); err != nil {
		return nil, err
	}
	snap.Warnings = append(snap.Warnings, nodeWarnings...)
	if err := runHook(tctx, "nodes", tx); err != nil {
		return nil, err
	}
	// last: on PostgreSQL a missing table aborts the transaction
	rev, warning, err := d.readSchemaRevision(tctx, tx)
	if err != nil {
		return nil, err
	}
	snap.SchemaRevision = rev
	if warning != "" {
		snap.Warnings = append(snap.Warnings, warning)
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

func (d *DB) readConductors(ctx context.Context, tx *sqlx.Tx, query string) (_ []Conductor, warnings []string, err error) {
	const step = "reading conductors"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	defer rows.Close()

	var out []Conductor
	for rows.Next() {
		var (
			c                Conductor
			online           anyBool
			drivers          sql.NullString
			created, updated dbTime
			hostname, cgroup string
			version          sql.NullString
			id               int64
		)
		if err := rows.Scan(&id, &hostname, &cgroup, &online, &drivers, &created, &updated, &version); err != nil {
			return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
		}
		c.ID, c.Hostname, c.ConductorGroup = id, hostname, cgroup
		c.Online = bool(online)
		c.CreatedAt, c.UpdatedAt = created.t, updated.t
		c.Version = version.String
		for _, col := range []struct {
			name string
			v    *dbTime
		}{{"created_at", &created}, {"updated_at", &updated}} {
			if col.v.bad != "" {
				warnings = append(warnings, fmt.Sprintf(
					"conductor %q (id %d): %s %s is not a timestamp, read as NULL", c.Hostname, c.ID, col.name, col.v.bad))
			}
		}
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

// readSchemaRevision reads alembic_version: "" when the table is missing
// (PostgreSQL 42P01, MySQL 1146, SQLite "no such table"), empty, or not
// granted to the exporter's role (then with a warning: the release is told
// by conductors.version alone). Several rows (never written by Ironic,
// whose chain is linear) join with ",". A deadline or a lost connection is
// an error as for the other queries.
func (d *DB) readSchemaRevision(ctx context.Context, tx *sqlx.Tx) (rev, warning string, err error) {
	const step = "reading alembic_version"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	var revs []string
	if err := tx.SelectContext(ctx, &revs, SQLSchemaRevision); err != nil {
		msg := err.Error()
		switch {
		case ctx.Err() != nil || !strings.Contains(msg, "alembic_version"):
			return "", "", stepError(step, ctx, d.opts.QueryTimeout, err)
		case strings.Contains(msg, "does not exist") || strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "no such table"):
			return "", "", nil
		}
		return "", "alembic_version cannot be read (grant SELECT on it to tell the Ironic release by the schema): " + msg, nil
	}
	return strings.Join(revs, ","), "", nil
}

// readHardwareTypes fills HardwareTypes of conductors (ordered by ID).
func (d *DB) readHardwareTypes(ctx context.Context, tx *sqlx.Tx, query string, conductors []Conductor) error {
	const step = "reading conductor hardware types"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, query)
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
			hts := conductors[i].HardwareTypes
			if n := len(hts); n == 0 || hts[n-1] != ht { // rows without DISTINCT come in runs
				conductors[i].HardwareTypes = append(hts, ht)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	// The server sorts by its collation; the snapshot promises byte order and
	// byte-wise distinct values.
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

func (d *DB) readNodes(ctx context.Context, tx *sqlx.Tx, query string) (_ []Node, warnings []string, err error) {
	const step = "reading nodes"
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
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
		maintenance                               anyBool
		created, updated                          dbTime
		badTimes                                  int
		firstBad                                  string
	)
	for rows.Next() {
		if err := rows.Scan(&id, &uuid, &name, &driver, &cgroup, &reservation, &instance,
			&power, &provision, &maintenance, &resourceClass, &created, &updated); err != nil {
			return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
		}
		if created.bad != "" || updated.bad != "" {
			if badTimes++; badTimes == 1 {
				firstBad = fmt.Sprintf("node %s (id %d): created_at %s, updated_at %s",
					uuid.String, id, created.describe(), updated.describe())
			}
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
			Maintenance:    bool(maintenance),
			ResourceClass:  slab.ptr(in.nullable(resourceClass)),
			CreatedAt:      created.t,
			UpdatedAt:      updated.t,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, stepError(step, ctx, d.opts.QueryTimeout, err)
	}
	if badTimes > 0 {
		warnings = append(warnings, fmt.Sprintf(
			"%d node(s) with a created_at or updated_at that is not a timestamp, read as NULL; first: %s", badTimes, firstBad))
	}
	return out, warnings, nil
}

// anyBool scans a boolean column: a boolean (PostgreSQL), or an integer
// (MySQL TINYINT(1), SQLite INTEGER) where any non-zero value is true, as
// SQLAlchemy's Boolean and MySQL's "IS TRUE" read it. NULL is false, as in
// Ironic's online.is_(True) filter.
type anyBool bool

func (b *anyBool) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*b = false
	case bool:
		*b = anyBool(x)
	case int64:
		*b = x != 0
	case []byte:
		return b.text(string(x))
	case string:
		return b.text(x)
	default:
		return fmt.Errorf("boolean column holds a %T", v)
	}
	return nil
}

func (b *anyBool) text(s string) error {
	switch s {
	case "t", "true", "TRUE", "1":
		*b = true
	case "f", "false", "FALSE", "0", "":
		*b = false
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("boolean column holds %q", s)
		}
		*b = n != 0
	}
	return nil
}

// dbTime scans a timestamp column holding naive UTC: a time from the driver
// (PostgreSQL, MySQL) whose wall clock is taken as UTC, or SQLAlchemy's text
// form (SQLite). A value that is neither reads as NULL with bad describing
// it, so that one odd row does not fail the snapshot.
type dbTime struct {
	t   time.Time // zero when NULL or bad
	bad string    // the unreadable value, quoted; "" when fine
}

func (d *dbTime) Scan(v any) error {
	*d = dbTime{}
	switch x := v.(type) {
	case nil:
	case time.Time:
		d.t = wallUTC(sql.NullTime{Time: x, Valid: true})
	case string:
		d.text(x)
	case []byte:
		d.text(string(x))
	case int64:
		d.bad = fmt.Sprintf("%d (an integer)", x)
	case float64:
		d.bad = fmt.Sprintf("%g (a number)", x)
	default:
		d.bad = fmt.Sprintf("(a %T)", v)
	}
	return nil
}

func (d *dbTime) text(s string) {
	t, err := parseSQLAlchemyTime(s)
	if err != nil {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		d.bad = strconv.Quote(s)
		return
	}
	d.t = t
}

func (d *dbTime) describe() string {
	if d.bad != "" {
		return d.bad
	}
	if d.t.IsZero() {
		return "NULL"
	}
	return d.t.Format("2006-01-02 15:04:05.999999")
}

// parseSQLAlchemyTime reads a DATETIME the way SQLAlchemy's SQLite dialect
// does (processors.str_to_datetime, regexp
// `(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)(?:\.(\d+))?`): SQLAlchemy writes
// "YYYY-MM-DD HH:MM:SS.ffffff" (always six digits), and reads the digits
// after the dot as a number of microseconds, so ".5" is 5µs, not half a
// second. The layout must be exactly that (SQLite's own CURRENT_TIMESTAMP
// "YYYY-MM-DD HH:MM:SS" included); anything else is an error, where
// SQLAlchemy would raise or misread.
func parseSQLAlchemyTime(s string) (time.Time, error) {
	bad := func() (time.Time, error) { return time.Time{}, fmt.Errorf("not a SQLAlchemy DATETIME: %q", s) }
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return bad()
	}
	num := func(p string) int {
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return -1
			}
			n = n*10 + int(p[i]-'0')
		}
		return n
	}
	year, mon, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	hour, min, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	micro := 0
	if rest := s[19:]; rest != "" {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 7 {
			return bad()
		}
		micro = num(rest[1:])
	}
	if year < 1 || mon < 1 || mon > 12 || day < 1 || hour < 0 || hour > 23 || min < 0 || min > 59 ||
		sec < 0 || sec > 59 || micro < 0 {
		return bad()
	}
	t := time.Date(year, time.Month(mon), day, hour, min, sec, micro*1000, time.UTC)
	if t.Day() != day { // Feb 30 and the like: Python's datetime refuses them
		return bad()
	}
	return t, nil
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
