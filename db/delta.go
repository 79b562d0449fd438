package db

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// SQLNodeProbe asks whether the nodes table may have changed, at the cost
// of one index-only pass instead of the rows. Every write Ironic makes to a
// node goes through its ORM model, whose oslo.db TimestampMixin sets
// created_at on insert (default=timeutils.utcnow; ironic/db/sqlalchemy/
// models.py IronicBase, c2df29e52) and updated_at on update
// (onupdate=timeutils.utcnow, which SQLAlchemy applies to Core UPDATEs
// too): the lock (Connection._reserve_node_place_lock and release_node in
// ironic/db/sqlalchemy/api.py, sa.update(models.Node).values(reservation=...)),
// update_node, enrolment (create_node: updated_at stays NULL, the count and
// max(id) catch it) and destroy_node (the count). db/probe_test.go proves it
// against Ironic 21.4's own DB API on PostgreSQL, MariaDB and SQLite.
// count(reservation) catches a lock and its release within one tick of a
// coarse updated_at (MySQL's DATETIME has whole seconds). max(created_at)
// catches the newest node deleted and another enrolled in between with the
// same id, count and max(id) unchanged (SQLite hands a table without
// AUTOINCREMENT the highest rowid + 1, as InnoDB before MySQL 8.0 and
// MariaDB 10.2.4 did after a restart: TestProbeSeesIronicWrites' "replace
// the newest" step, on Ironic 21.4's schema and DB API).
const SQLNodeProbe = `SELECT count(*), coalesce(max(id), 0), max(updated_at), count(reservation), max(created_at)
FROM nodes`

// NodeProbe is the answer of SQLNodeProbe. Two equal probes taken apart
// say that no node was enrolled, deleted or written in between, provided
// that the later writes carry an updated_at later than MaxUpdatedAt (see
// topology.CacheConfig.ProbeWindow for clocks of coarse ticks or skew).
type NodeProbe struct {
	// Count is the number of nodes.
	Count int64
	// MaxID is the highest node id, 0 without nodes.
	MaxID int64
	// MaxUpdatedAt is the latest updated_at (UTC), zero when every node's
	// is NULL.
	MaxUpdatedAt time.Time
	// Reserved is the number of nodes holding a lock.
	Reserved int64
	// MaxCreatedAt is the latest created_at (UTC), zero without nodes.
	MaxCreatedAt time.Time
}

// Latest is the later of MaxUpdatedAt and MaxCreatedAt: the newest write
// the probe saw. A probe vouches for the writes that follow it, and a delta
// read (SnapshotChanges) finds them, when it was taken at least
// topology.CacheConfig.ProbeWindow after Latest.
func (p NodeProbe) Latest() time.Time {
	if p.MaxCreatedAt.After(p.MaxUpdatedAt) {
		return p.MaxCreatedAt
	}
	return p.MaxUpdatedAt
}

// probeNodes runs SQLNodeProbe, as the dialect words it, in tx.
func (d *DB) probeNodes(s *dbconn.Session, query string) (NodeProbe, error) {
	var (
		updated, created       dbconn.Time
		count, maxID, reserved sql.NullInt64
	)
	err := s.Step("probing nodes", func(ctx context.Context, tx *sqlx.Tx) error {
		return tx.QueryRowContext(ctx, query).Scan(&count, &maxID, &updated, &reserved, &created)
	})
	if err != nil {
		return NodeProbe{}, err
	}
	return NodeProbe{Count: count.Int64, MaxID: maxID.Int64, Reserved: reserved.Int64, MaxUpdatedAt: updated.T,
		MaxCreatedAt: created.T}, nil
}

// SQLNodeIDs lists the ids of the nodes, for a delta read whose merged
// nodes outnumber the probe's count: the ids no longer listed are the nodes
// deleted since the known probe. Every dialect reads it as it is.
const SQLNodeIDs = `SELECT id FROM nodes ORDER BY id`

// NodeRead says how a snapshot came by its nodes.
type NodeRead string

// The kinds of node read (bounded values, for a metric label).
const (
	// NodeReadFull: every node was read.
	NodeReadFull NodeRead = "full"
	// NodeReadDelta: only the rows that may have changed since a known
	// probe were read and merged into the known nodes (SnapshotChanges).
	NodeReadDelta NodeRead = "delta"
	// NodeReadSkipped: the probe equalled the known one and no node was
	// read (Snapshot.Nodes is empty).
	NodeReadSkipped NodeRead = "skipped"
)

// Known is what an earlier snapshot of this DB said of the nodes table:
// its probe and its nodes, as that snapshot returned them (never modified),
// ordered by id.
type Known struct {
	// Probe is the earlier snapshot's NodeProbe.
	Probe NodeProbe
	// Nodes are the earlier snapshot's nodes (after its own merge, for a
	// delta snapshot).
	Nodes []*Node
	// Window widens the rows read by a delta: writes with an updated_at or
	// created_at down to Window before the probe's Latest are read again
	// (the cache passes its ProbeWindow). Negative is zero.
	Window time.Duration
	// Recent says that Probe was taken within Window of its Latest: a
	// write in the same tick of a coarse clock may have left the probe
	// unchanged, so an equal probe does not spare the node read; the rows
	// written since are read as a delta all the same (they carry a
	// timestamp no earlier than Latest less Window).
	Recent bool
}

// SnapshotChanges is Snapshot, sparing what it can of the node read. When
// known is not nil and not Recent and the nodes table still probes as
// known.Probe (SQLNodeProbe, in the same transaction as the conductors), no
// node is read (NodeReadSkipped). When the probe differs, only the rows that
// may have changed since known.Probe are read and merged by id into
// known.Nodes (NodeReadDelta), unless the delta cannot be proven to give what
// a full read would: then every node is read (NodeReadFull). Nodes are always
// complete; known.Nodes is never written.
//
// The rows read are those with an id above known.Probe.MaxID, or an
// updated_at or created_at from known.Probe.Latest() less known.Window on:
// every write, provided each carries such a timestamp, the probe's own
// assumption (SQLNodeProbe: ironic/db/sqlalchemy/api.py create_node,
// _do_update_node, _reserve_node_place_lock, release_node and destroy_node at
// 0099d1812 set one; TestDeltaSeesIronicWrites runs them), and the probe was
// taken at least ProbeWindow after Latest (a coarse clock's tick, the skew
// between Ironic's hosts and the exporter: topology.CacheConfig.ProbeWindow).
// Deletions leave no row: when the merged nodes outnumber the probe's count,
// SQLNodeIDs lists the ids left. The merged nodes must then agree with the
// probe of the same transaction (count, max(id), max(updated_at),
// max(created_at), the locks), or every node is read. Every node is read,
// too, when the probe saw no timestamp, or when known.Probe is not that of
// this DB's last node read or that read had rows with problems: their
// warnings are told only by a full read.
func (d *DB) SnapshotChanges(ctx context.Context, known *Known) (*Snapshot, error) {
	s := since{delta: known}
	if known != nil && !known.Recent {
		s.probe = &known.Probe
	}
	return d.snapshotRetrying(ctx, s)
}

// changedSince is the second and third parameter of the delta read,
// known.Probe.Latest() less known.Window rounded down to the second, as text
// "YYYY-MM-DD HH:MM:SS", which every backend compares rightly to the column
// as stored: PostgreSQL types it as the column's naive timestamp, MySQL turns
// it into a DATETIME (whole seconds anyway), and SQLite compares it byte by
// byte to SQLAlchemy's "YYYY-MM-DD HH:MM:SS.ffffff", so that a row of the
// same second compares greater or equal. false when the probe saw no
// timestamp: nothing bounds the writes since.
func changedSince(known *Known) (string, bool) {
	latest := known.Probe.Latest()
	if latest.IsZero() {
		return "", false
	}
	from := latest.Add(-max(known.Window, 0)).UTC()
	return from.Add(-time.Duration(from.Nanosecond())).Format(time.DateTime), true
}

// readDelta reads with query (a changedNodes statement) the rows that may
// have changed since known.Probe and merges them into known.Nodes (see
// SnapshotChanges); probe is the session's. false (and no error) when the
// delta cannot be proven exact: the caller then reads every node.
func (d *DB) readDelta(s *dbconn.Session, query string, binary bool, known *Known, probe NodeProbe) ([]*Node, bool, error) {
	from, ok := changedSince(known)
	if last := d.lastNodeRead.Load(); !ok || last == nil || last.probe != known.Probe || len(last.warnings) > 0 {
		return nil, false, nil
	}
	changed, nw, err := d.decodeNodes(s, "reading nodes changed since the last read", query, binary, 16,
		known.Probe.MaxID, from, from)
	if err != nil {
		return nil, false, err
	}
	if err := d.runHook(s, "changed nodes"); err != nil {
		return nil, false, err
	}
	if len(nw) > 0 {
		return nil, false, nil // told by the full read
	}
	nodes := mergeNodes(known.Nodes, changed)
	if int64(len(nodes)) > probe.Count {
		ids := make([]int64, 0, probe.Count)
		err := s.Step("reading node ids", func(ctx context.Context, tx *sqlx.Tx) error {
			return tx.SelectContext(ctx, &ids, SQLNodeIDs)
		})
		if err != nil {
			return nil, false, err
		}
		if err := d.runHook(s, "node ids"); err != nil {
			return nil, false, err
		}
		nodes = keepIDs(nodes, ids)
	}
	if !agrees(nodes, probe) {
		return nil, false, nil
	}
	nodes = sameAs(nodes, known.Nodes)
	d.lastNodeRead.Store(&nodeRead{probe: probe, nodes: nodes})
	return nodes, true, nil
}

// mergeNodes returns prev with the rows of changed in place of those of
// the same id, and the others inserted by id; both are ordered by id, and
// so is the result. prev is not written.
func mergeNodes(prev, changed []*Node) []*Node {
	out := make([]*Node, 0, len(prev)+len(changed))
	for _, c := range changed {
		i, found := slices.BinarySearchFunc(prev, c.ID, func(n *Node, id int64) int { return cmp.Compare(n.ID, id) })
		out = append(out, prev[:i]...)
		out = append(out, c)
		if found {
			i++
		}
		prev = prev[i:]
	}
	return append(out, prev...)
}

// keepIDs drops, in place, the nodes whose id is not in ids; both are
// ordered by id.
func keepIDs(nodes []*Node, ids []int64) []*Node {
	return slices.DeleteFunc(nodes, func(n *Node) bool { // in order; clears the tail
		for len(ids) > 0 && ids[0] < n.ID {
			ids = ids[1:]
		}
		return len(ids) == 0 || ids[0] != n.ID
	})
}

// agrees reports whether nodes are what probe counted: as many, strictly
// ordered by id up to its max(id), as many locks, the same latest updated_at
// and created_at. A merge that missed a row, or kept one that is gone,
// fails one of these (unless another miss makes up for it exactly).
func agrees(nodes []*Node, probe NodeProbe) bool {
	if int64(len(nodes)) != probe.Count {
		return false
	}
	var (
		last, reserved   int64
		updated, created Stamp
	)
	for i, n := range nodes {
		if i > 0 && n.ID <= last {
			return false
		}
		last = n.ID
		if n.Reservation != nil {
			reserved++
		}
		updated, created = max(updated, n.UpdatedAt), max(created, n.CreatedAt)
	}
	return last == probe.MaxID && reserved == probe.Reserved && updated == StampOf(probe.MaxUpdatedAt) &&
		created == StampOf(probe.MaxCreatedAt)
}
