// Package novadb reads Nova's databases, read-only, for package nova: the
// cells from nova_api's cell_mappings, then from each cell's database its
// nova-compute services, ironic compute nodes and the instances of their
// hosts. Every read goes through package dbconn, as Ironic's does (a
// read-only transaction, a deadline per step, the watchdog, error kinds,
// no password in any error), one pool per database.
//
// A cell whose database fails keeps its last good read, marked with the
// error: an outage of one cell makes only that cell's answers stale. A
// cell's compute nodes and instances are read again only when a probe says
// they may have changed (SQLProbeComputeNodes, SQLProbeInstances); its
// services, which every nova-compute writes every report_interval, at
// every read.
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
)

// Reader reads Nova's databases. It is safe for concurrent use; reads are
// serialised.
type Reader struct {
	api          *dbconn.Pool
	connection   string // [database]connection, to fill cell templates
	cellTemplate string // Config.CellTemplate
	opts         dbconn.Options
	window       time.Duration
	now          func() time.Time
	shared       Shared

	mu    sync.Mutex
	cells map[string]*cellState // by cell uuid
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
	// ProbeWindow: a probe whose latest timestamp is less than this older
	// than the read that took it spares no later read (a write within the
	// same tick of a coarse clock, or a skewed one, leaves the same
	// timestamps). Default 2s.
	ProbeWindow time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Shared, when set, gives the uuid strings the rows share with
	// Ironic's nodes.
	Shared Shared
}

// Shared gives, for the uuid of an Ironic node, Ironic's own string of it
// and of the node's instance_uuid (nil: none); ok is false when Ironic has
// no such node. The rows a read keeps (while their probes are unchanged)
// then hold no copy of a uuid Ironic's nodes hold: at 100k nodes those
// copies were 12 MB of the live heap, whose row in the README's
// Performance table is 600 B/node with Nova configured. Ironic's reads
// keep a node's strings while its row keeps them (package db), so the
// shared strings stay those of the current nodes.
type Shared func(uuid string) (node string, instance *string, ok bool)

// node is Ironic's string of the node uuid u, or u.
func (f Shared) node(u string) string {
	if f != nil {
		if n, _, ok := f(u); ok {
			return n
		}
	}
	return u
}

// instance are Ironic's strings of node and of instance u on it, or node
// and u.
func (f Shared) instance(node, u string) (string, string) {
	if f == nil {
		return node, u
	}
	n, inst, ok := f(node)
	if !ok {
		return node, u
	}
	if inst != nil && *inst == u {
		u = *inst
	}
	return n, u
}

// Open sets up the pool to nova_api. It does not connect.
func Open(cfg Config) (*Reader, error) {
	api, err := dbconn.Open(cfg.APIConnection, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("nova_api connection: %w", err)
	}
	r := &Reader{api: api, connection: cfg.Connection, cellTemplate: cfg.CellTemplate, opts: cfg.Options, window: cfg.ProbeWindow, now: cfg.Now,
		shared: cfg.Shared, cells: map[string]*cellState{}}
	if r.window <= 0 {
		r.window = 2 * time.Second
	}
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
	Backend dbconn.Backend
	// Err is why this read of the cell failed; nil when it did not.
	Err error
	// ReadAt is when Cell's rows were read; zero when never.
	ReadAt time.Time
	// Reread says which of compute nodes and instances were read again
	// (the others' probes were unchanged).
	Reread struct{ ComputeNodes, Instances bool }
	// Warnings are about rows with values their columns cannot hold
	// (SQLite), read as NULL.
	Warnings []string
	// nodeWarnings are those of the compute nodes read, kept with them.
	nodeWarnings []string
}

// Read reads nova_api's cells, then each cell. hosts are hosts whose
// instances must be read whether or not they have an ironic compute node
// (the computes of a settings file). An error reading nova_api fails the
// whole read (the cells are not known); a cell's error is in its CellRead.
func (r *Reader) Read(ctx context.Context, hosts []string) (*Snapshot, error) {
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
		snap.Cells = append(snap.Cells, st.read(ctx, r, m, hosts, snap.ReadAt))
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
	// last is the last good read; probes its tables' probes then.
	last   CellRead
	probes [2]probe // compute nodes, instances
	// vouch says whether each probe of last vouches for the rows
	// (taken at least the window after its latest timestamp).
	vouch [2]bool
	// hosts are the extra hosts whose instances last holds.
	hosts []string
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

// read reads the cell of m: its failure keeps the last good rows.
func (c *cellState) read(ctx context.Context, r *Reader, m nova.CellMapping, hosts []string, now time.Time) CellRead {
	out := c.last
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
	next, probes, err := c.readRows(ctx, m, hosts, r.shared)
	if err != nil {
		out.Err = fmt.Errorf("reading cell %s (%s): %w", cellName(m), c.pool, c.pool.Scrub(err))
		return out
	}
	next.Database, next.Backend, next.ReadAt = out.Database, out.Backend, now
	next.Credentials, next.User = out.Credentials, out.User
	for i, p := range probes {
		c.vouch[i] = now.Sub(p.latest()) >= r.window
	}
	c.last, c.probes, c.hosts = next, probes, slices.Clone(hosts)
	return next
}

func cellName(m nova.CellMapping) string {
	if m.Name == "" {
		return m.UUID
	}
	return m.Name + " " + m.UUID
}

// readRows reads the cell's rows in one read-only transaction, reusing the
// last compute nodes and instances when their probes are unchanged and
// vouched for.
func (c *cellState) readRows(ctx context.Context, m nova.CellMapping, hosts []string, shared Shared) (CellRead, [2]probe, error) {
	var probes [2]probe
	s, err := c.pool.Begin(ctx, 5+len(hosts))
	if err != nil {
		return CellRead{}, probes, err
	}
	failed := true
	defer func() { s.End(failed) }()
	out := CellRead{Cell: nova.Cell{Name: m.Name, UUID: m.UUID}}
	var odd, oddNodes oddValues
	if out.Cell.Services, err = readServices(s, &odd); err != nil {
		return out, probes, err
	}
	if probes[0], err = readProbe(s, "probing compute_nodes", SQLProbeComputeNodes); err != nil {
		return out, probes, err
	}
	if probes[1], err = readProbe(s, "probing instances", SQLProbeInstances); err != nil {
		return out, probes, err
	}
	hasLast := !c.last.ReadAt.IsZero()
	if hasLast && c.vouch[0] && probes[0] == c.probes[0] {
		out.Cell.ComputeNodes, out.Cell.SoftDeletedHosts = c.last.Cell.ComputeNodes, c.last.Cell.SoftDeletedHosts
		out.nodeWarnings = c.last.nodeWarnings
	} else {
		out.Reread.ComputeNodes = true
		if out.Cell.ComputeNodes, out.Cell.SoftDeletedHosts, err = readComputeNodes(s, shared, probes[0].count, &oddNodes); err != nil {
			return out, probes, err
		}
		out.nodeWarnings = oddNodes.warnings()
	}
	out.Warnings = append(odd.warnings(), out.nodeWarnings...)
	// the instances read depends on the compute nodes' hosts, and hosts
	if hasLast && c.vouch[1] && probes[1] == c.probes[1] && !out.Reread.ComputeNodes && slices.Equal(hosts, c.hosts) {
		out.Cell.Instances = c.last.Cell.Instances
	} else {
		out.Reread.Instances = true
		if out.Cell.Instances, err = readInstances(s, c.pool.Backend(), out.Cell, hosts, shared); err != nil {
			return out, probes, err
		}
	}
	failed = false
	return out, probes, nil
}
