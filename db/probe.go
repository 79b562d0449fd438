package db

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// SQLNodeProbe asks whether the nodes table may have changed, at the cost
// of one index-only pass instead of the rows. Every write Ironic makes to a
// node goes through its ORM model, whose updated_at column has oslo.db's
// TimestampMixin onupdate=timeutils.utcnow: SQLAlchemy applies it to ORM
// flushes and to Core UPDATE statements on the table alike, which includes
// the lock (Connection._reserve_node_place_lock and release_node in
// ironic/db/sqlalchemy/api.py, sa.update(models.Node).values(reservation=...))
// as well as update_node, enrolment (create_node sets created_at, and
// updated_at stays NULL: the count and max(id) catch it) and destroy_node
// (the count). db/probe_test.go proves it against Ironic 21.4's own DB API
// on PostgreSQL, MariaDB and SQLite. count(reservation) catches a lock and
// its release within one tick of a coarse updated_at (MySQL's DATETIME has
// whole seconds). max(created_at) catches the newest node deleted and
// another enrolled between two probes where the new row takes the deleted
// one's id (seen on SQLite with Ironic 21.4's schema and DB API: the
// "replace the newest" step of TestProbeSeesIronicWrites; SQLite hands a
// table without AUTOINCREMENT the highest rowid + 1, as InnoDB before
// MySQL 8.0 and MariaDB 10.2.4 did after a restart): count and max(id) are
// then unchanged, and the new row's updated_at is NULL.
// Ironic's TimestampMixin sets created_at on every insert (oslo.db's
// default=timeutils.utcnow; ironic/db/sqlalchemy/models.py IronicBase,
// c2df29e52).
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
