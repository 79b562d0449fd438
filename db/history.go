package db

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// HistoryEvent is one row of node_history (Ironic 18.2+, fbaad948d, alembic
// 9ef41f07cb58) without its free text (event, user, project): what the
// metrics and the page may show to anyone who may read nodes.
type HistoryEvent struct {
	// ID is the primary key; rows are written in id order.
	ID int64
	// NodeID is nodes.id of the node (0 when NULL: a node since deleted).
	NodeID int64
	// Conductor is the [DEFAULT]host of the conductor that recorded it
	// (conductor/utils.py node_history_record writes CONF.host).
	Conductor string
	// Severity is "ERROR" or "INFO" as node_history_record writes it.
	Severity string
	// EventType is the activity ("provisioning", "cleaning", "monitoring",
	// ... or a driver's word; "UNKNOWN" when none was given).
	EventType string
	// CreatedAt is when it was recorded (UTC); zero when NULL or unreadable.
	CreatedAt time.Time
}

// HistoryRead is what one read of node_history found.
type HistoryRead struct {
	// Present says that the schema has node_history; when false the rest
	// is empty.
	Present bool
	// Events are the rows with an id above the read's cursor, in id order,
	// at most HistoryBatch of them.
	Events []HistoryEvent
	// Warning says why the table could not be read although it exists (a
	// read-only role without SELECT on it); "" otherwise.
	Warning string
}

// HistoryBatch bounds the rows one read takes: a flood of events is read
// over several refreshes, never in one unbounded result.
const HistoryBatch = 5000

// The node_history statements. The table check reads the catalogue, so that
// a schema older than 18.2 costs no failing statement (and no error line in
// the server's log) at every refresh; each backend words it its own way.
const (
	// SQLHistoryTablePostgreSQL is true when node_history is on the search path.
	SQLHistoryTablePostgreSQL = `SELECT to_regclass('node_history') IS NOT NULL`
	// SQLHistoryTableMySQL counts node_history in the connection's database.
	SQLHistoryTableMySQL = `SELECT COUNT(*) > 0 FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name = 'node_history'`
	// SQLHistoryTableSQLite counts node_history in the main database.
	SQLHistoryTableSQLite = `SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'node_history'`
	// SQLHistoryMaxID is where a first read starts from: the newest row's
	// id (the primary key's index answers it).
	SQLHistoryMaxID = `SELECT COALESCE(MAX(id), 0) FROM node_history`
)

// SQLHistoryAfter reads at most HistoryBatch rows after a cursor by the
// primary key, with only the columns every release since 18.2 has and no
// free text; param is its one parameter's marker (dbconn.Param).
func SQLHistoryAfter(param string) string {
	return `SELECT id, node_id, conductor, severity, event_type, created_at
FROM node_history
WHERE id > ` + param + `
ORDER BY id
LIMIT ` + strconv.Itoa(HistoryBatch)
}

// historyTable is the catalogue lookup of node_history on backend b.
func historyTable(b rules.Backend) string {
	switch b {
	case rules.MySQL:
		return SQLHistoryTableMySQL
	case rules.SQLite:
		return SQLHistoryTableSQLite
	}
	return SQLHistoryTablePostgreSQL
}

// History reads node_history's rows with an id above after, in a read-only
// transaction of its own (events are only ever appended: nothing needs them
// to agree with a snapshot). after <= 0 is a first read: it starts backlog
// rows before the newest one. A role that may not read the table gets a
// warning, not an error; a deadline or a lost connection is an error.
func (d *DB) History(ctx context.Context, after int64, backlog int) (HistoryRead, error) {
	var out HistoryRead
	s, err := d.Begin(ctx, 3)
	if err != nil {
		return out, d.Scrub(err)
	}
	defer func() { s.End(err != nil) }()
	tableQuery, afterQuery := historyTable(d.Backend()), SQLHistoryAfter(dbconn.Param(d.Backend(), 1))
	err = s.Step("looking for node_history", func(ctx context.Context, tx *sqlx.Tx) error {
		return tx.QueryRowxContext(ctx, tableQuery).Scan(&out.Present)
	})
	if err != nil || !out.Present {
		return out, d.Scrub(err)
	}
	if after <= 0 {
		var maxID int64
		err = s.Step("reading node_history's newest id", func(ctx context.Context, tx *sqlx.Tx) error {
			return tx.QueryRowxContext(ctx, SQLHistoryMaxID).Scan(&maxID)
		})
		if err != nil {
			if w, ok := historyDenied(err); ok {
				out.Warning, err = w, nil
			}
			return out, d.Scrub(err)
		}
		after = max(maxID-int64(backlog), 0)
	}
	err = s.Rows("reading node_history", afterQuery, false, func(rows *sql.Rows) error {
		var (
			e              HistoryEvent
			node           sql.NullInt64
			cond, sev, typ sql.NullString
			created        dbconn.Time
		)
		if err := rows.Scan(&e.ID, &node, &cond, &sev, &typ, &created); err != nil {
			return err
		}
		e.NodeID, e.CreatedAt = node.Int64, created.T
		e.Conductor = strings.ToValidUTF8(cond.String, "\uFFFD")
		e.Severity = strings.ToValidUTF8(sev.String, "\uFFFD")
		e.EventType = strings.ToValidUTF8(typ.String, "\uFFFD")
		out.Events = append(out.Events, e)
		return nil
	}, after)
	if err != nil {
		if w, ok := historyDenied(err); ok {
			out.Warning, err = w, nil
		}
	}
	return out, d.Scrub(err)
}

// historyDenied turns the server refusing SELECT on node_history
// (PostgreSQL 42501 insufficient_privilege, MySQL 1142
// ER_TABLEACCESS_DENIED_ERROR) into a warning.
func historyDenied(err error) (string, bool) {
	if dbconn.ServerSays(err, "42501", 1142, "not authorized") {
		return fmt.Sprintf("node_history cannot be read (grant SELECT on it for the history metrics): %v", err), true
	}
	return "", false
}
