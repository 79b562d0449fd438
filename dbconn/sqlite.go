package dbconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"modernc.org/sqlite"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The SQLite dialect, on modernc.org/sqlite (pure Go, no cgo). SQLAlchemy's
// sqlite:///rel/path is relative to the working directory (the exporter's,
// when Open is called), sqlite:////abs/path absolute. The file is opened as
// a SQLite URI with mode=ro (never created or written; a missing file fails
// the connection) and PRAGMA query_only. Ironic's conductor writes the same
// file, so the exporter must never hold it up: a snapshot is one deferred
// BEGIN ... ROLLBACK around a few SELECTs (in rollback-journal mode a SHARED
// lock for milliseconds, which a writer's busy handler, 5s in Python's
// sqlite3, rides out; in WAL mode neither blocks the other), and the busy
// timeout is the query deadline, so that a snapshot waits, not fails, while
// Ironic commits (a writer holding PENDING or EXCLUSIVE makes new readers
// wait). Timestamps are read as text and parsed as SQLAlchemy parses them
// (Time), never by the driver's guesses. The query options of SQLAlchemy's
// pysqlite mean nothing to a reader: dropped, reported by Pool.IgnoredOptions.

var sqliteIgnored = map[string]bool{
	"timeout": true, "check_same_thread": true, "isolation_level": true,
	"detect_types": true, "cached_statements": true, "factory": true,
	"plugin": true, "charset": true,
}

type sqliteDialect struct {
	dialectBase
	path string // absolute
}

func newSQLiteFromURL(u *sqlaURL) (dialect, error) {
	if len(u.Hosts) > 0 || u.HasUser {
		return nil, errors.New("database URL: a SQLite URL names a file, not a host or user (sqlite:////var/lib/ironic/ironic.sqlite for an absolute path)")
	}
	if !u.HasDatabase || u.Database == ":memory:" {
		return nil, errors.New("database URL: a SQLite URL must name the database file Ironic uses (sqlite:////absolute/path or sqlite:///relative/path); an in-memory database has nothing to read")
	}
	d := &sqliteDialect{dialectBase: dialectBase{kind: rules.SQLite, driver: "sqlite", tx: sql.TxOptions{ReadOnly: true}}}
	for _, q := range u.Query {
		switch {
		case q.Key == "uri":
			return nil, errors.New(`database URL option "uri" is not supported: give the file's path (sqlite:////path/to/ironic.sqlite)`)
		case sqliteIgnored[q.Key]:
			d.dropped = append(d.dropped, q.Key)
		default:
			return nil, fmt.Errorf("unknown database option %q for SQLite", q.Key)
		}
	}
	abs, err := filepath.Abs(u.Database)
	if err != nil {
		return nil, fmt.Errorf("database URL: resolving the SQLite path: %w", err)
	}
	d.path = abs
	return d, nil
}

// dsn is the modernc.org/sqlite DSN: a read-only SQLite URI. The busy
// timeout follows the query deadline (opts with defaults).
func (d *sqliteDialect) dsn(opts Options) string {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_txlock", "deferred")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.QueryTimeout.Milliseconds()))
	q.Add("_pragma", "query_only(1)")
	// Path escaping as SQLite's URI parser wants it: '%', '?', '#' and
	// spaces percent-encoded.
	return "file:" + (&url.URL{Path: d.path}).EscapedPath() + "?" + q.Encode()
}

func (d *sqliteDialect) connector(opts Options) driver.Connector {
	c, err := sqlite.NewConnector(d.dsn(opts))
	if err != nil {
		return errConnector{fmt.Errorf("opening SQLite database %s read-only: %w", d.path, err)}
	}
	return &sqliteConnector{Connector: c, path: d.path}
}

// errConnector fails every connection with err.
type errConnector struct{ err error }

func (c errConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c errConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

// sqliteConnector names the file in connection errors ("unable to open
// database file" alone does not say which).
type sqliteConnector struct {
	driver.Connector
	path string
}

func (c *sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s read-only: %w", c.path, err)
	}
	return conn, nil
}
