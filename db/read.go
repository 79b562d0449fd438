package db

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The snapshot queries (with SQLConductors, SQLNodes and
// SQLNodesWithoutOwner, worded from their column lists in columns.go). They
// name only columns that exist since Ironic Rocky
// (alembic revision 664f85c2f622 added conductor_group to both tables;
// nodes.conductor_affinity and target_provision_state are older still), are
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
)

// ErrNotIronic is in the chain of a snapshot error when the database has no
// conductors, conductor_hardware_interfaces or nodes table: it is not
// Ironic's database (or Ironic's schema was never created), a permanent
// problem that retrying will not fix, unlike a lost connection or a
// timeout.
var ErrNotIronic = errors.New("not Ironic's database")

// serverSays reports whether err is one server error, told by its
// PostgreSQL SQLSTATE (any driver with SQLState()), its MySQL/MariaDB error
// number, or, for SQLite, whose driver has no error type for it, a part of
// its message.
func serverSays(err error, sqlState string, mysqlNumber uint16, sqliteText string) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) && state.SQLState() == sqlState {
		return true
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) && my.Number == mysqlNumber {
		return true
	}
	return strings.Contains(err.Error(), sqliteText)
}

// notIronic marks with ErrNotIronic the server saying a table does not
// exist: PostgreSQL SQLSTATE 42P01 (undefined_table), MySQL/MariaDB error
// 1146 (ER_NO_SUCH_TABLE), SQLite "no such table".
func notIronic(err error) error {
	if err != nil && serverSays(err, "42P01", 1146, "no such table: ") {
		return fmt.Errorf("%w (no such table: is this Ironic's database, with its schema?): %w", ErrNotIronic, err)
	}
	return err
}

// queries are the three statements of a snapshot, as a dialect words them.
// Their columns are those of SQLConductors, SQLHardwareTypes and SQLNodes, in
// that order; a timestamp column may come as a time or as SQLAlchemy's text
// form, a boolean as a boolean or an integer, and the hardware types need not
// be distinct (the reader deduplicates them byte-wise).
type queries struct {
	conductors, hardwareTypes, nodes string
	// nodesWithoutOwner is nodes with NULL for owner and lessee (schemas
	// older than those columns, see SQLNodesWithoutOwner).
	nodesWithoutOwner string
	// probe is SQLNodeProbe as the dialect words it.
	probe string
	// changedNodes and changedNodesWithoutOwner are nodes and
	// nodesWithoutOwner limited to the rows that may have changed since a
	// probe (changedWhere), read as nodes is.
	changedNodes, changedNodesWithoutOwner string
	// binaryNodes says that nodes and nodesWithoutOwner hand their text
	// columns over as bytea and their timestamps as timestamp_send's
	// bytes, to be run as a prepared statement (see pgQueries).
	binaryNodes bool
}

// pgRawTextQueries are the statements for a PostgreSQL database whose text
// is not all valid in its encoding (SQL_ASCII): the text columns come as
// bytea, unconverted, so that the server never refuses a row.
var pgRawTextQueries = func() queries {
	q := pgRawTextWording.queries(dollarParam)
	q.hardwareTypes = `SELECT DISTINCT conductor_id, convert_to(hardware_type, 'SQL_ASCII')
FROM conductor_hardware_interfaces
ORDER BY 1, 2`
	return q
}()

// isInvalidEncoding reports PostgreSQL's refusal to convert text to the
// client's encoding (22021 character_not_in_repertoire, 22P05
// untranslatable_character).
func isInvalidEncoding(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "22021" || pqErr.Code == "22P05")
}

// standardQueries are the statements as written above (PostgreSQL's
// pgQueries read the nodes from them in binary).
var standardQueries = plainWording.queries(dollarParam)

// testHook, when a test sets it, runs inside the snapshot transaction after
// BEGIN ("begin") and after each query ("conductors", "hardware types",
// "nodes", "changed nodes", "node ids"). An error from it aborts the
// snapshot.
var testHook = noHook

func noHook(context.Context, string, *sqlx.Tx) error { return nil }

// Snapshot reads conductors, their hardware types and nodes in one read-only
// REPEATABLE READ transaction, so that the three agree. Getting a connection
// and each query have their own deadline of QueryTimeout; ctx bounds the
// whole, whatever the network does: a connection whose step overran its
// deadline is closed and discarded, never reused. A connection the server
// closed while it sat idle in the pool (pg_terminate_backend,
// idle_session_timeout, wait_timeout, a fail-over) is retried once on a new
// connection. A row that cannot be decoded does not fail the snapshot: it is
// kept as well as possible and described in Snapshot.Warnings and
// Snapshot.WarningCounts. Errors say which step failed after how long, and
// never contain the password.
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
	s, err := d.snapshotOwnerFallback(ctx, known)
	if err != nil && ctx.Err() == nil && d.dialect.kind == BackendPostgreSQL && isInvalidEncoding(err) && !d.rawText.Load() {
		// A SQL_ASCII database holding bytes that are not UTF-8: the
		// server refuses to send them as UTF-8 text. Read the text
		// columns as bytes from now on; the reader checks them.
		d.rawText.Store(true)
		s, err = d.snapshotOwnerFallback(ctx, known)
	}
	if err != nil && ctx.Err() == nil && retryable(err) {
		s, err = d.snapshotOwnerFallback(ctx, known)
		if err != nil {
			err = fmt.Errorf("%w (after retrying on a new connection)", err)
		}
	}
	return s, d.scrub(err)
}

// Values of DB.ownerCols: whether nodes has the owner and lessee columns.
const (
	ownerColsUnknown int32 = iota
	ownerColsPresent
	ownerColsMissing
)

// snapshotOwnerFallback is snapshot, read again without nodes.owner and
// nodes.lessee (and without them from then on) when the first nodes query
// of the process finds a schema older than those columns (nodes.owner:
// Ironic 12.1, Stein; nodes.lessee: 15.0, Ussuri).
func (d *DB) snapshotOwnerFallback(ctx context.Context, known since) (*Snapshot, error) {
	s, err := d.snapshot(ctx, known)
	if err != nil && ctx.Err() == nil && d.ownerCols.Load() == ownerColsUnknown && missingOwnerColumn(err) {
		d.ownerCols.Store(ownerColsMissing)
		s, err = d.snapshot(ctx, known)
	}
	if err == nil && s.NodeRead != NodeReadSkipped {
		d.ownerCols.CompareAndSwap(ownerColsUnknown, ownerColsPresent)
	}
	return s, err
}

// missingOwnerColumn reports whether err is the nodes query failing on a
// schema without the owner or lessee column: PostgreSQL SQLSTATE 42703
// (undefined_column), MySQL/MariaDB 1054 (ER_BAD_FIELD_ERROR), SQLite "no
// such column", naming owner or lessee.
func missingOwnerColumn(err error) bool {
	msg := strings.ToLower(err.Error())
	if !strings.HasPrefix(msg, "reading nodes") || (!strings.Contains(msg, "owner") && !strings.Contains(msg, "lessee")) {
		return false
	}
	return serverSays(err, "42703", 1054, "no such column")
}

// noWatch is the watch of connections whose driver honours contexts itself.
func noWatch(context.Context) func() bool { return func() bool { return false } }

func (d *DB) snapshot(ctx context.Context, known since) (_ *Snapshot, err error) {
	begin := time.Now()
	cctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	conn, err := d.db.Connx(cctx)
	cancel()
	if err != nil {
		return nil, stepError(cctx, "connecting to database", begin, err)
	}
	// watch closes the connection's socket when a step's context ends, for
	// drivers that would otherwise block in a read (lib/pq, see watchdog.go).
	watch := noWatch
	_ = conn.Raw(func(dc any) error {
		if w, ok := dc.(watchedConn); ok {
			watch = w.watch
		}
		return nil
	})
	defer func() {
		if err != nil {
			// Whatever failed, the connection is not trusted again.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
	}()

	// The transaction's context bounds BEGIN and guards against a stuck
	// step: four steps of QueryTimeout at most.
	tctx, cancel := context.WithTimeout(ctx, 4*d.opts.QueryTimeout)
	defer cancel()
	defer watch(tctx)()
	stepStart := time.Now()
	tx, err := conn.BeginTxx(tctx, &d.dialect.tx)
	if err != nil {
		return nil, stepError(tctx, "starting read-only transaction", stepStart, err)
	}
	// Read-only: rolling back is all there is to end it.
	defer func() { _ = tx.Rollback() }()
	if err := testHook(tctx, "begin", tx); err != nil {
		return nil, err
	}

	snap := &Snapshot{Backend: d.dialect.kind}
	w := &warner{}
	q := d.dialect.q
	if d.rawText.Load() {
		q = &pgRawTextQueries
	}
	nodesQuery, changedQuery := q.nodes, q.changedNodes
	if d.ownerCols.Load() == ownerColsMissing {
		nodesQuery, changedQuery = q.nodesWithoutOwner, q.changedNodesWithoutOwner
	}
	if snap.Conductors, err = d.readConductors(tctx, watch, tx, q.conductors, w); err != nil {
		return nil, notIronic(err)
	}
	if err := testHook(tctx, "conductors", tx); err != nil {
		return nil, err
	}
	if err := d.readHardwareTypes(tctx, watch, tx, q.hardwareTypes, snap.Conductors, w); err != nil {
		return nil, notIronic(err)
	}
	if err := testHook(tctx, "hardware types", tx); err != nil {
		return nil, err
	}
	if snap.NodeProbe, err = d.probeNodes(tctx, watch, tx, q.probe); err != nil {
		return nil, notIronic(err)
	}
	snap.NodeRead = NodeReadFull
	if known.probe != nil && *known.probe == snap.NodeProbe {
		snap.NodeRead = NodeReadSkipped
		// The probe does not see a column renamed or dropped under the
		// exporter: the node read itself, with no row, proves it would
		// still work (the server only plans it).
		err := d.readRows(tctx, watch, tx, "checking the nodes columns", nodesQuery+"\nLIMIT 0", false, func(*sql.Rows) error { return nil })
		if err != nil {
			return nil, notIronic(err)
		}
		if last := d.lastNodeRead.Load(); last != nil {
			w.addNodes(last.warnings) // the nodes the cache reuses still have them
		}
	} else {
		var delta bool
		if known.delta != nil {
			if snap.Nodes, delta, err = d.readDelta(tctx, watch, tx, changedQuery, q.binaryNodes, known.delta, snap.NodeProbe); err != nil {
				return nil, notIronic(err)
			}
		}
		if delta {
			snap.NodeRead = NodeReadDelta
		} else {
			if snap.Nodes, err = d.readNodes(tctx, watch, tx, nodesQuery, q.binaryNodes, snap.NodeProbe, w); err != nil {
				return nil, notIronic(err)
			}
			if err := testHook(tctx, "nodes", tx); err != nil {
				return nil, err
			}
		}
	}
	// The schema revision last: on PostgreSQL a missing table aborts the
	// transaction.
	rev, warning, err := d.readSchemaRevision(tctx, watch, tx)
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

// stepError wraps err with the step and, when the step's deadline expired,
// says so with the time the step really took (errors.Is(err,
// context.DeadlineExceeded) holds then).
func stepError(ctx context.Context, step string, start time.Time, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		took := time.Since(start).Round(time.Millisecond)
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: timed out after %s: %w", step, took, err)
		}
		return fmt.Errorf("%s: timed out after %s (%w): %w", step, took, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s: %w", step, err)
}

func (d *DB) readConductors(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, query string, w *warner) ([]Conductor, error) {
	var out []Conductor
	err := d.readRows(ctx, watch, tx, "reading conductors", query, false, func(rows *sql.Rows) error {
		var (
			c                Conductor
			online           anyBool
			drivers          sql.NullString
			created, updated dbTime
			hostname, cgroup sql.NullString
			version          sql.NullString
		)
		if err := rows.Scan(&c.ID, &hostname, &cgroup, &online, &drivers, &created, &updated, &version); err != nil {
			return err
		}
		c.Hostname = w.conductorText(c.ID, hostname.String, "hostname", hostname.Valid, hostname.String)
		c.ConductorGroup = w.conductorText(c.ID, c.Hostname, "conductor_group", cgroup.Valid, cgroup.String)
		c.Online = bool(online)
		c.CreatedAt, c.UpdatedAt = created.t, updated.t
		c.Version = version.String
		for _, col := range []struct {
			name string
			v    *dbTime
		}{{"created_at", &created}, {"updated_at", &updated}} {
			if col.v.bad != "" {
				w.add(tableConductors, ReasonBadTimestamp, fmt.Sprintf(
					"conductor %q (id %d): %s %s is not a timestamp, read as NULL", c.Hostname, c.ID, col.name, col.v.bad))
			}
		}
		if drivers.Valid {
			if err := json.Unmarshal([]byte(drivers.String), &c.Drivers); err != nil {
				c.Drivers = nil
				w.add(tableConductors, ReasonBadJSON, fmt.Sprintf(
					"conductor %q (id %d): drivers column is not a JSON list of strings, read as empty: %v",
					c.Hostname, c.ID, err))
			}
			for i, dr := range c.Drivers {
				c.Drivers[i] = strings.ToValidUTF8(dr, "\uFFFD") // s itself when valid
			}
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readSchemaRevision reads alembic_version: "" when the table is missing
// (PostgreSQL 42P01, MySQL 1146, SQLite "no such table"), empty, or not
// granted to the exporter's role (then with a warning: the release is told
// by conductors.version alone). Several rows (never written by Ironic,
// whose chain is linear) join with ",". A deadline or a lost connection is
// an error as for the other queries.
func (d *DB) readSchemaRevision(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx) (rev, warning string, err error) {
	var revs []string
	err = d.inStep(ctx, watch, "reading alembic_version", func(ctx context.Context) error {
		err := tx.SelectContext(ctx, &revs, SQLSchemaRevision)
		if err == nil {
			return nil
		}
		revs = nil
		msg := err.Error()
		switch {
		case ctx.Err() != nil || !strings.Contains(msg, "alembic_version"):
			return err
		case strings.Contains(msg, "does not exist") || strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "no such table"):
			return nil
		}
		warning = "alembic_version cannot be read (grant SELECT on it to tell the Ironic release by the schema): " + msg
		return nil
	})
	if err != nil {
		return "", "", err
	}
	return strings.Join(revs, ","), warning, nil
}

// readHardwareTypes fills HardwareTypes of conductors (ordered by ID).
func (d *DB) readHardwareTypes(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, query string, conductors []Conductor, w *warner) error {
	err := d.readRows(ctx, watch, tx, "reading conductor hardware types", query, false, func(rows *sql.Rows) error {
		var (
			id int64
			nt sql.NullString
		)
		if err := rows.Scan(&id, &nt); err != nil {
			return err
		}
		if !nt.Valid {
			w.add(tableHardwareInterfaces, ReasonNull, fmt.Sprintf(
				"conductor_hardware_interfaces (conductor_id %d): hardware_type is NULL, row skipped", id))
			return nil
		}
		ht := nt.String
		if !utf8.ValidString(ht) {
			ht = strings.ToValidUTF8(ht, "\uFFFD")
			w.add(tableHardwareInterfaces, ReasonNotUTF8, fmt.Sprintf(
				"conductor_hardware_interfaces (conductor_id %d): hardware_type is not UTF-8, read as %q", id, ht))
		}
		// Rows of a conductor the snapshot does not have cannot exist (a
		// foreign key, the same transaction); skip them if they do.
		if i, ok := slices.BinarySearchFunc(conductors, id, func(c Conductor, id int64) int {
			return cmp.Compare(c.ID, id)
		}); ok {
			conductors[i].HardwareTypes = append(conductors[i].HardwareTypes, ht)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The server sorts by its collation; the snapshot promises byte order and
	// byte-wise distinct values.
	for i := range conductors {
		slices.Sort(conductors[i].HardwareTypes)
		conductors[i].HardwareTypes = slices.Compact(conductors[i].HardwareTypes)
	}
	return nil
}

// readNodes reads every node with query. With binary (see
// queries.binaryNodes) it prepares the statement, so that lib/pq asks for
// bytea and integers in binary: the driver then hands over slices of its
// own buffer, neither copied nor parsed, and the timestamps as eight bytes.
// probe, the one in the same transaction, sizes the nodes and is kept with
// the rows' problems (DB.lastNodeRead).
func (d *DB) readNodes(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, query string, binary bool, probe NodeProbe, w *warner) ([]*Node, error) {
	out, nw, err := d.decodeNodes(ctx, watch, tx, "reading nodes", query, binary, int(probe.Count))
	if err != nil {
		return nil, err
	}
	if last := d.lastNodeRead.Load(); last != nil {
		out = sameAs(out, last.nodes)
	}
	// Kept for the refreshes whose probe says the nodes did not change: the
	// rows, and so their problems, are the same.
	d.lastNodeRead.Store(&nodeRead{probe: probe, warnings: nw, nodes: out})
	w.addNodes(nw)
	return out, nil
}

// sameAs returns last when nodes are its very nodes (no row changed), so
// that a topology built from last is reused whole (topology.Build: at 100k
// nodes, a build over every node and 5 MB of garbage spared per full read
// of an unchanged fleet); nodes otherwise.
func sameAs(nodes, last []*Node) []*Node {
	if slices.Equal(nodes, last) {
		return last
	}
	return nodes
}

// decodeNodes reads the nodes query returns (given args), as one step,
// into a slice of capacity size, and tells their problems.
func (d *DB) decodeNodes(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, step, query string, binary bool, size int, args ...any) ([]*Node, []nodeWarning, error) {
	dec := newNodeDecoder(size)
	if last := d.lastNodeRead.Load(); last != nil {
		dec.prev = last.nodes
	}
	// Scan targets, reused across rows. Text columns are scanned as
	// sql.RawBytes (the driver's buffer, no copy).
	var r nodeRow
	targets := r.targets(binary)
	err := d.readRows(ctx, watch, tx, step, query, binary, func(rows *sql.Rows) error {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		dec.add(&r)
		return nil
	}, args...)
	if err != nil {
		return nil, nil, err
	}
	return dec.out, dec.warnings(), nil
}

// The text columns of a node row, in nodeRow.text.
const (
	colUUID = iota
	colName
	colDriver
	colGroup
	colReservation
	colInstance
	colPower
	colProvision
	colResourceClass
	colTarget
	colOwner
	colLessee
	nodeTextCols
)

// nodeTextNames name the columns of nodeRow.text, for warnings.
var nodeTextNames = [nodeTextCols]string{"uuid", "name", "driver", "conductor_group", "reservation",
	"instance_uuid", "power_state", "provision_state", "resource_class", "target_provision_state",
	"owner", "lessee"}

// targets are the scan targets of r, one per column of nodeColumns in
// their order; with binary the timestamps are timestamp_send's. It panics
// on a column without a field in nodeRow (TestNodeRowTargets).
func (r *nodeRow) targets(binary bool) []any {
	out := make([]any, 0, len(nodeColumns))
	for _, c := range nodeColumns {
		var t any
		switch c.name {
		case "id":
			t = &r.id
		case "maintenance":
			t = &r.maintenance
		case "conductor_affinity":
			t = &r.affinity
		case "created_at", "updated_at":
			v := &r.created
			if c.name == "updated_at" {
				v = &r.updated
			}
			t = v
			if binary {
				t = (*pgBinaryTime)(v)
			}
		default:
			if i := slices.Index(nodeTextNames[:], c.name); i >= 0 && c.kind == columnText {
				t = &r.text[i]
			}
		}
		if t == nil {
			panic("db: nodeRow has no field for nodes." + c.name)
		}
		out = append(out, t)
	}
	return out
}

// nodeRow is one row of the nodes query as the driver hands it over. The
// text columns may be views of the driver's buffer, valid until its next
// row; nil is NULL.
type nodeRow struct {
	id               int64
	text             [nodeTextCols]sql.RawBytes
	maintenance      anyBool
	created, updated dbTime
	affinity         sql.NullInt64
}

// nodeDecoder turns node rows into Nodes, the values of low-cardinality
// columns shared. It tallies the rows' problems for warnings.
type nodeDecoder struct {
	out []*Node
	in  interner
	// prev are the nodes of the last read, ordered by id, and next the
	// index in prev of the next row's id or above: a row of a node read
	// before is that *Node when no column changed, and keeps the strings
	// that did not change otherwise. A refresh then holds new values only
	// for the nodes that changed, beside the nodes it replaces: peak RSS,
	// a refresh included, within twice the live heap.
	prev           []*Node
	next           int
	badTimes       int
	firstBad       string
	nulls, notUTF8 rowTally
}

// newNodeDecoder returns a decoder sized for n nodes.
func newNodeDecoder(n int) *nodeDecoder {
	return &nodeDecoder{out: make([]*Node, 0, n), in: interner{}}
}

// add decodes one row; r's text may be rewritten (invalid UTF-8 replaced).
func (dec *nodeDecoder) add(r *nodeRow) {
	if r.created.bad != "" || r.updated.bad != "" {
		if dec.badTimes++; dec.badTimes == 1 {
			dec.firstBad = fmt.Sprintf("node %s (id %d): created_at %s, updated_at %s",
				r.text[colUUID], r.id, r.created.describe(), r.updated.describe())
		}
	}
	if r.text[colGroup] == nil {
		// Ironic's model: conductor_group NOT NULL, default ''.
		dec.nulls.add(string(r.text[colUUID]), r.id, "conductor_group")
	}
	for i := range r.text {
		if v := r.text[i]; v != nil && !utf8.Valid(v) {
			r.text[i] = sql.RawBytes(strings.ToValidUTF8(string(v), "\uFFFD"))
			dec.notUTF8.add(string(r.text[colUUID]), r.id, nodeTextNames[i])
		}
	}
	t := &r.text
	old := &unread
	for dec.next < len(dec.prev) && dec.prev[dec.next].ID < r.id {
		dec.next++
	}
	if dec.next < len(dec.prev) && dec.prev[dec.next].ID == r.id {
		old = dec.prev[dec.next]
	}
	uuid := old.UUID
	if uuid != string(t[colUUID]) {
		uuid = string(t[colUUID]) // NULL (never in practice) reads as ""
	}
	n := Node{
		ID:                   r.id,
		UUID:                 uuid,
		Name:                 ptrOf(t[colName], old.Name),
		Driver:               dec.in.str(t[colDriver]),
		ConductorGroup:       dec.in.str(t[colGroup]),
		Reservation:          dec.in.keep(t[colReservation], old.Reservation),
		InstanceUUID:         ptrOf(t[colInstance], old.InstanceUUID),
		PowerState:           dec.in.keep(t[colPower], old.PowerState),
		ProvisionState:       dec.in.keep(t[colProvision], old.ProvisionState),
		Maintenance:          bool(r.maintenance),
		ResourceClass:        dec.in.keep(t[colResourceClass], old.ResourceClass),
		CreatedAt:            r.created.t,
		UpdatedAt:            r.updated.t,
		TargetProvisionState: dec.in.keep(t[colTarget], old.TargetProvisionState),
		Owner:                dec.in.keep(t[colOwner], old.Owner),
		Lessee:               dec.in.keep(t[colLessee], old.Lessee),
		ConductorAffinity:    affinity(r.affinity, old.ConductorAffinity),
	}
	if old != &unread && n == *old {
		dec.out = append(dec.out, old) // every pointer is old's: the same values
		return
	}
	p := new(Node) // not &n: n would then be allocated for every row
	*p = n
	dec.out = append(dec.out, p)
}

// unread is the previous node of a row that no read had.
var unread Node

// affinity is conductor_affinity, nil for NULL: old when it has that value.
func affinity(v sql.NullInt64, old *int64) *int64 {
	switch {
	case !v.Valid:
		return nil
	case old != nil && *old == v.Int64:
		return old
	}
	p := new(int64) // not &v.Int64: v would then be allocated for every row
	*p = v.Int64
	return p
}

// warnings describes the problems of the rows added.
func (dec *nodeDecoder) warnings() []nodeWarning {
	var nw []nodeWarning
	if dec.badTimes > 0 {
		nw = append(nw, nodeWarning{ReasonBadTimestamp, dec.badTimes, fmt.Sprintf(
			"%d node(s) with a created_at or updated_at that is not a timestamp, read as NULL; first: %s", dec.badTimes, dec.firstBad)})
	}
	if dec.nulls.n > 0 {
		nw = append(nw, nodeWarning{ReasonNull, dec.nulls.n, fmt.Sprintf(
			"%d node(s) with conductor_group NULL, read as the default group \"\"; first: %s", dec.nulls.n, dec.nulls.first)})
	}
	if dec.notUTF8.n > 0 {
		nw = append(nw, nodeWarning{ReasonNotUTF8, dec.notUTF8.n, fmt.Sprintf(
			"%d node(s) with text that is not UTF-8, invalid bytes read as U+FFFD; first: %s", dec.notUTF8.n, dec.notUTF8.first)})
	}
	return nw
}

// readRows runs query with args as one step of the snapshot (inStep), as a
// prepared statement when prepared, and calls row for each row it returns;
// an error of row ends the step with it.
func (d *DB) readRows(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, step, query string, prepared bool, row func(*sql.Rows) error, args ...any) error {
	return d.inStep(ctx, watch, step, func(ctx context.Context) error {
		var rows *sql.Rows
		if prepared {
			stmt, err := tx.PrepareContext(ctx, query)
			if err != nil {
				return err
			}
			defer func() { _ = stmt.Close() }()
			if rows, err = stmt.QueryContext(ctx, args...); err != nil {
				return err
			}
		} else {
			var err error
			if rows, err = tx.QueryContext(ctx, query, args...); err != nil {
				return err
			}
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			if err := row(rows); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return rows.Close()
	})
}

// inStep runs f as one step of the snapshot: under a deadline of its own
// (QueryTimeout) and the connection watchdog, its error wrapped with the
// step's name (stepError).
func (d *DB) inStep(ctx context.Context, watch func(context.Context) func() bool, step string, f func(context.Context) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	defer watch(ctx)()
	if err := f(ctx); err != nil {
		return stepError(ctx, step, start, err)
	}
	return nil
}

// nodeRead is what DB.lastNodeRead keeps of a node read.
type nodeRead struct {
	probe    NodeProbe
	warnings []nodeWarning
	// nodes are the nodes it returned (those the cache holds), which the
	// next read reuses where a row did not change, and their strings where
	// a column did not (nodeDecoder.prev, sameAs).
	nodes []*Node
}

// nodeWarning is one kind of problem of the nodes of a read.
type nodeWarning struct {
	reason string
	rows   int
	line   string
}

// addNodes adds the problems of a node read.
func (w *warner) addNodes(nw []nodeWarning) {
	for _, x := range nw {
		w.addN(tableNodes, x.reason, x.rows, x.line)
	}
}

// rowTally counts the nodes with one kind of problem and names the first.
type rowTally struct {
	n     int
	last  int64
	first string
}

func (t *rowTally) add(uuid string, id int64, column string) {
	if t.n > 0 && t.last == id {
		return // one count per row
	}
	if t.n++; t.n == 1 {
		t.first = fmt.Sprintf("node %s (id %d), column %s", strings.ToValidUTF8(uuid, "\uFFFD"), id, column)
	}
	t.last = id
}

// The tables and reasons of WarningCount (bounded values, for labels).
const (
	tableConductors         = "conductors"
	tableHardwareInterfaces = "conductor_hardware_interfaces"
	tableNodes              = "nodes"

	// ReasonBadJSON: a JSON column (conductors.drivers) that does not
	// decode; read as empty.
	ReasonBadJSON = "bad_json"
	// ReasonBadTimestamp: a timestamp column that holds no timestamp;
	// read as NULL.
	ReasonBadTimestamp = "bad_timestamp"
	// ReasonNotUTF8: text that is not UTF-8 (e.g. a PostgreSQL SQL_ASCII
	// or a MySQL latin1 database); invalid bytes read as U+FFFD.
	ReasonNotUTF8 = "not_utf8"
	// ReasonNull: NULL in a column Ironic's model declares NOT NULL; read
	// as Ironic's default ("" for conductor_group), or the row skipped
	// (a NULL hardware_type).
	ReasonNull = "null"
)

// warner collects the problems of the rows of one snapshot.
type warner struct {
	lines  []string
	counts map[[2]string]int
}

func (w *warner) add(table, reason, line string) { w.addN(table, reason, 1, line) }

func (w *warner) addN(table, reason string, rows int, line string) {
	if w.counts == nil {
		w.counts = map[[2]string]int{}
	}
	w.counts[[2]string{table, reason}] += rows
	w.lines = append(w.lines, line)
}

// conductorText checks one text column of a conductor row: NULL reads as
// "", text that is not UTF-8 has its invalid bytes replaced.
func (w *warner) conductorText(id int64, host, column string, valid bool, v string) string {
	host = strings.ToValidUTF8(host, "\uFFFD")
	if !valid {
		w.add(tableConductors, ReasonNull, fmt.Sprintf("conductor %q (id %d): %s is NULL, read as \"\"", host, id, column))
		return ""
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
		w.add(tableConductors, ReasonNotUTF8, fmt.Sprintf("conductor %q (id %d): %s is not UTF-8, read as %q", host, id, column, v))
	}
	return v
}

func (w *warner) result() ([]string, []WarningCount) {
	if len(w.counts) == 0 {
		return w.lines, nil
	}
	out := make([]WarningCount, 0, len(w.counts))
	for _, k := range slices.SortedFunc(maps.Keys(w.counts), func(a, b [2]string) int { return slices.Compare(a[:], b[:]) }) {
		out = append(out, WarningCount{Table: k[0], Reason: k[1], Rows: w.counts[k]})
	}
	return w.lines, out
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
		d.t = wallUTC(x)
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

// pgBinaryTime scans a timestamp sent by PostgreSQL's timestamp_send as
// bytea: microseconds since 2000-01-01 00:00:00, big-endian, the wall clock
// as stored (naive UTC). +-infinity, which no time.Time holds, read as
// NULL with bad set, as dbTime reads their text.
type pgBinaryTime dbTime

// pgEpoch is PostgreSQL's timestamp epoch, 2000-01-01, in Unix seconds.
const pgEpoch = 946684800

func (d *pgBinaryTime) Scan(v any) error {
	*d = pgBinaryTime{}
	b, ok := v.([]byte)
	switch {
	case v == nil:
		return nil
	case !ok:
		d.bad = fmt.Sprintf("(a %T)", v)
		return nil
	case len(b) != 8:
		d.bad = fmt.Sprintf("(%d bytes, not timestamp_send's 8)", len(b))
		return nil
	}
	switch us := int64(binary.BigEndian.Uint64(b)); us {
	case math.MaxInt64:
		d.bad = strconv.Quote("infinity")
	case math.MinInt64:
		d.bad = strconv.Quote("-infinity")
	default:
		d.t = time.Unix(pgEpoch+us/1e6, us%1e6*1e3).UTC() // time.Unix normalises a negative remainder
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
	date, micro, hasMicro := strings.Cut(s, ".")
	t, err := time.Parse(time.DateTime, date) // refuses Feb 30 and the like, as Python's datetime does
	var us uint64
	if err == nil && hasMicro {
		us, err = strconv.ParseUint(micro, 10, 32) // digits only
	}
	if err != nil || len(date) != len(time.DateTime) || len(micro) > 6 || t.Year() < 1 {
		return time.Time{}, fmt.Errorf("not a SQLAlchemy DATETIME: %q", s)
	}
	return t.Add(time.Duration(us) * time.Microsecond), nil
}

// wallUTC returns the stored wall-clock time in time.UTC. Ironic stores naive
// UTC; drivers tag such values with a zone of their own (lib/pq: a nameless
// fixed zone; MySQL: the loc parameter), which must not shift them.
func wallUTC(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// interner shares one string, and one *string, per distinct value of the
// low-cardinality columns (driver, group, states, resource class,
// reservation, owner, lessee) across the nodes of one snapshot, which the
// collector keeps: without it the seven nullable ones alone would cost
// about 200 B a node of the 600 B/node live heap target. The snapshot is
// read-only, so nodes may share the pointer.
type interner map[string]*string

// ptr returns the shared *string of a column's bytes, nil for NULL; the
// lookup converts nothing.
func (in interner) ptr(b sql.RawBytes) *string {
	if b == nil {
		return nil
	}
	if v, ok := in[string(b)]; ok {
		return v
	}
	s := string(b)
	in[s] = &s
	return &s
}

// keep is ptr, but old when it has b's text.
func (in interner) keep(b sql.RawBytes, old *string) *string {
	if b != nil && old != nil && *old == string(b) {
		return old
	}
	return in.ptr(b)
}

// str is ptr for a column read as "" when NULL.
func (in interner) str(b []byte) string {
	if p := in.ptr(b); p != nil {
		return *p
	}
	return ""
}

// ptrOf returns a *string of b's text, nil for NULL: old when it has that
// text.
func ptrOf(b sql.RawBytes, old *string) *string {
	if b == nil {
		return nil
	}
	if old != nil && *old == string(b) {
		return old
	}
	s := string(b)
	return &s
}
