// Package novadb reads Nova's databases, read-only, for package nova: the
// cells from nova_api's cell_mappings, then from each cell's database its
// nova-compute services, ironic compute nodes and the instances of their
// hosts. Every read goes through package dbconn, as Ironic's does (a
// read-only transaction, a deadline per step, the watchdog, error kinds,
// no password in any error), one pool per database.
//
// The reader keeps only its connections: the caller (novacache) holds the
// last read and hands it back (Known), as topology.Cache hands package db
// its nodes (db.Known). A cell whose database fails keeps the known read,
// marked with the error: an outage of one cell makes only that cell's
// answers stale. A cell's compute nodes and instances are read again only
// when a probe says they may have changed (SQLProbeComputeNodes,
// SQLProbeInstances); its services, which every nova-compute writes every
// report_interval, at every read.
package novadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Reader reads Nova's databases. It is safe for concurrent use; reads are
// serialised.
type Reader struct {
	api          *dbconn.Pool
	connection   string // [database]connection, to fill cell templates
	cellTemplate string // Config.CellTemplate
	opts         dbconn.Options
	now          func() time.Time

	mu    sync.Mutex
	cells map[string]*cellState // by cell uuid
	// generation is the last Generation a read of rows took.
	generation uint64
}

// Config configures a Reader.
type Config struct {
	// APIConnection is nova_api's connection ([api_database]connection).
	APIConnection string
	// Connection is [database]connection of Nova's configuration, the
	// values a templated cell_mappings.database_connection is filled
	// with (nova.FormatDBURL); "" when not known.
	Connection string
	// CellTemplate, when set, gives every cell's connection instead of
	// cell_mappings' (Nova's own, read-write credentials): it is filled
	// with the parts of the cell's URL (nova.FillCellTemplate), so a
	// read-only user reaches each cell's server and database. A cell it
	// cannot be filled for fails to read; cell_mappings' URL is never
	// used then.
	CellTemplate string
	// Options tune every pool and its deadlines.
	Options dbconn.Options
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Open sets up the pool to nova_api. It does not connect.
func Open(cfg Config) (*Reader, error) {
	api, err := dbconn.Open(cfg.APIConnection, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("nova_api connection: %w", err)
	}
	r := &Reader{api: api, connection: cfg.Connection, cellTemplate: cfg.CellTemplate, opts: cfg.Options, now: cfg.Now,
		cells: map[string]*cellState{}}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Credentials are CellRead.Credentials' values: where a cell's
// connection comes from.
const (
	// CredentialsCellMappings: cell_mappings' URL, as Nova connects.
	CredentialsCellMappings = "cell_mappings"
	// CredentialsTemplate: Config.CellTemplate filled for the cell.
	CredentialsTemplate = "template"
)

// String is nova_api's connection without its password.
func (r *Reader) String() string { return r.api.String() }

// Close closes every pool.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := []error{r.api.Close()}
	for _, c := range r.cells {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Snapshot is one read of Nova's databases.
type Snapshot struct {
	// Cells are the cells of cell_mappings but cell0, in its order.
	Cells []CellRead
	// ReadAt is when the read started (the exporter's clock).
	ReadAt time.Time
}

// CellRead is one cell's read.
type CellRead struct {
	// Cell holds the rows; when Err is set, those of the last good read
	// (none if there was none).
	Cell nova.Cell
	// Database is the cell's connection without its password.
	Database string
	// Credentials say where the connection comes from
	// (CredentialsCellMappings or CredentialsTemplate), User the database
	// user it logs in as ("" when not known: SQLite, or no connection).
	Credentials, User string
	// Backend is the kind of the cell's database.
	Backend rules.Backend
	// Err is why this read of the cell failed; nil when it did not.
	Err error
	// ReadAt is when Cell's rows were read; zero when never.
	ReadAt time.Time
	// Reread says which of compute nodes and instances were read again
	// (the others' probes were unchanged).
	Reread struct{ ComputeNodes, Instances bool }
	// Generation names the rows Cell.ComputeNodes and Cell.Instances hold:
	// each read of a table's rows takes a new one, unique within the
	// Reader, and a read that reuses them keeps theirs. Equal generations
	// are the same rows, so a consumer tells unchanged rows without
	// comparing them.
	Generation Generation
	// Warnings are about rows with values their columns cannot hold
	// (SQLite), read as NULL; RowWarnings count them by table.
	Warnings    []string
	RowWarnings []nova.RowWarning

	// url is the connection the rows were read from; probes their tables'
	// probes (compute nodes, instances) and hosts the extra hosts whose
	// instances they hold: what the next read compares (Known).
	url    string
	probes [2]probe
	hosts  []string
	// nodeWarnings and nodeCounts are those of the compute nodes read,
	// kept with them.
	nodeWarnings []string
	nodeCounts   []nova.RowWarning
}

// Known is what the caller holds of the last read, handed back to Read:
// the rows of a cell whose probes are unchanged, and vouched for, are not
// read again.
type Known struct {
	// Last is the last read; nil: none, every row is read.
	Last *Snapshot
	// Window: a probe whose latest timestamp is less than this older than
	// the read that took it spares no later read (a write within the same
	// tick of a coarse clock, or a skewed one, leaves the same timestamps);
	// topology.DefaultProbeWindow, as for Ironic's nodes.
	Window time.Duration
}

// cell is the last read of the cell of uuid read from url with
// credentials; zero when there is none.
func (k *Known) cell(uuid, url, credentials string) CellRead {
	if k == nil || k.Last == nil {
		return CellRead{}
	}
	for _, c := range k.Last.Cells {
		if c.Cell.UUID == uuid && c.url == url && c.Credentials == credentials {
			return c
		}
	}
	return CellRead{}
}

// Generation is CellRead.Generation: per table, which read its rows come
// from.
type Generation struct{ ComputeNodes, Instances uint64 }

// Read reads nova_api's cells, then each cell. hosts are hosts whose
// instances must be read whether or not they have an ironic compute node
// (the computes of a settings file); known (nil: none) is the last read.
// An error reading nova_api fails the whole read (the cells are not
// known); a cell's error is in its CellRead.
func (r *Reader) Read(ctx context.Context, hosts []string, known *Known) (*Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := &Snapshot{ReadAt: r.now()}
	mappings, err := r.readCellMappings(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading nova_api (%s): %w", r.api, err)
	}
	seen := map[string]bool{}
	for _, m := range mappings {
		if m.UUID == nova.Cell0UUID || seen[m.UUID] {
			continue
		}
		seen[m.UUID] = true
		url, _ := nova.FormatDBURL(m.DatabaseConnection, r.connection)
		credentials, err := CredentialsCellMappings, error(nil)
		if r.cellTemplate != "" {
			credentials = CredentialsTemplate
			url, err = nova.FillCellTemplate(r.cellTemplate, url)
		}
		st := r.cells[m.UUID]
		if st != nil && (st.url != url || st.credentials != credentials) {
			_ = st.close()
			st = nil
		}
		if st == nil {
			st = &cellState{url: url, credentials: credentials, err: err}
			r.cells[m.UUID] = st
		}
		last := known.cell(m.UUID, url, credentials)
		var window time.Duration
		if known != nil {
			window = known.Window
		}
		snap.Cells = append(snap.Cells, st.read(ctx, r, m, hosts, last, window, snap.ReadAt))
	}
	for u, st := range r.cells {
		if !seen[u] {
			_ = st.close()
			delete(r.cells, u)
		}
	}
	return snap, nil
}

// readCellMappings reads nova_api's cell_mappings.
func (r *Reader) readCellMappings(ctx context.Context) ([]nova.CellMapping, error) {
	s, err := r.api.Begin(ctx, 1)
	if err != nil {
		return nil, r.api.Scrub(err)
	}
	var out []nova.CellMapping
	err = s.Rows("reading cell_mappings", SQLCellMappings, false, func(rows *sql.Rows) error {
		var uuid, name, conn sql.NullString
		if err := rows.Scan(&uuid, &name, &conn); err != nil {
			return err
		}
		out = append(out, nova.CellMapping{UUID: uuid.String, Name: name.String, DatabaseConnection: conn.String})
		return nil
	})
	s.End(err != nil)
	return out, r.api.Scrub(err)
}

// cellState is what the reader keeps of one cell between reads.
type cellState struct {
	url, credentials string
	// err is why the cell's connection could not be made from the
	// template: the cell then fails every read.
	err  error
	pool *dbconn.Pool
}

func (c *cellState) close() error {
	if c.pool == nil {
		return nil
	}
	return c.pool.Close()
}

// probe is a table's answer to its probe statement.
type probe struct {
	count, maxID                int64
	created, updated, deletedAt time.Time
}

func (p probe) latest() time.Time {
	return slices.MaxFunc([]time.Time{p.created, p.updated, p.deletedAt}, time.Time.Compare)
}

// read reads the cell of m: its failure keeps last, the last read's rows;
// a probe of last taken at least window after its latest timestamp
// vouches for its rows.
func (c *cellState) read(ctx context.Context, r *Reader, m nova.CellMapping, hosts []string, last CellRead, window time.Duration, now time.Time) CellRead {
	out := last
	out.url = c.url
	out.Cell.Name, out.Cell.UUID = m.Name, m.UUID
	out.Reread.ComputeNodes, out.Reread.Instances = false, false
	out.Credentials = c.credentials
	if c.err != nil {
		out.Database, out.User, out.Err = "", "", fmt.Errorf("cell %s connection: %w", cellName(m), c.err)
		return out
	}
	if c.pool == nil {
		pool, err := dbconn.Open(c.url, r.opts)
		if err != nil {
			out.Database, out.User, out.Err = dbconn.Redact(c.url), "", fmt.Errorf("cell %s connection: %w", cellName(m), err)
			return out
		}
		c.pool = pool
	}
	out.Database, out.Backend, out.User = c.pool.String(), c.pool.Backend(), c.pool.User()
	next, err := c.readRows(ctx, m, hosts, last, window)
	if err != nil {
		out.Err = fmt.Errorf("reading cell %s (%s): %w", cellName(m), c.pool, c.pool.Scrub(err))
		return out
	}
	next.Generation, next.url, next.hosts = last.Generation, c.url, slices.Clone(hosts)
	if next.Reread.ComputeNodes {
		r.generation++
		next.Generation.ComputeNodes = r.generation
	}
	if next.Reread.Instances {
		r.generation++
		next.Generation.Instances = r.generation
	}
	next.Database, next.Backend, next.ReadAt = out.Database, out.Backend, now
	next.Credentials, next.User = out.Credentials, out.User
	return next
}

func cellName(m nova.CellMapping) string {
	if m.Name == "" {
		return m.UUID
	}
	return m.Name + " " + m.UUID
}

// readRows reads the cell's rows in one read-only transaction, reusing
// last's compute nodes and instances when their probes are unchanged and
// vouched for (taken at least window after their latest timestamp).
func (c *cellState) readRows(ctx context.Context, m nova.CellMapping, hosts []string, last CellRead, window time.Duration) (CellRead, error) {
	s, err := c.pool.Begin(ctx, 5+len(hosts))
	if err != nil {
		return CellRead{}, err
	}
	failed := true
	defer func() { s.End(failed) }()
	out := CellRead{Cell: nova.Cell{Name: m.Name, UUID: m.UUID}}
	var odd, oddNodes oddValues
	if out.Cell.Services, err = readServices(s, &odd); err != nil {
		return out, err
	}
	if out.probes[0], err = readProbe(s, "probing compute_nodes", SQLProbeComputeNodes); err != nil {
		return out, err
	}
	if out.probes[1], err = readProbe(s, "probing instances", SQLProbeInstances); err != nil {
		return out, err
	}
	reuse := func(i int) bool {
		return !last.ReadAt.IsZero() && last.ReadAt.Sub(last.probes[i].latest()) >= window && out.probes[i] == last.probes[i]
	}
	if reuse(0) {
		out.Cell.ComputeNodes, out.Cell.SoftDeletedHosts = last.Cell.ComputeNodes, last.Cell.SoftDeletedHosts
		out.nodeWarnings, out.nodeCounts = last.nodeWarnings, last.nodeCounts
	} else {
		out.Reread.ComputeNodes = true
		if out.Cell.ComputeNodes, out.Cell.SoftDeletedHosts, err = readComputeNodes(s, out.probes[0].count, &oddNodes); err != nil {
			return out, err
		}
		out.nodeWarnings, out.nodeCounts = oddNodes.warnings(), oddNodes.counts()
	}
	out.Warnings = append(odd.warnings(), out.nodeWarnings...)
	out.RowWarnings = append(odd.counts(), out.nodeCounts...)
	// the instances read depends on the compute nodes' hosts, and hosts
	if reuse(1) && !out.Reread.ComputeNodes && slices.Equal(hosts, last.hosts) {
		out.Cell.Instances = last.Cell.Instances
	} else {
		out.Reread.Instances = true
		if out.Cell.Instances, err = readInstances(s, c.pool.Backend(), out.Cell, hosts); err != nil {
			return out, err
		}
	}
	failed = false
	return out, nil
}
