// Package dbconn is the exporter's connection layer to an OpenStack
// service's SQL database: it turns the connection string an operator copies
// from the service's configuration ([database]connection, a SQLAlchemy URL,
// or a libpq string) into a Go driver with the same meaning (TLS, option
// files, sockets), keeps one small pool per process, and runs read-only
// sessions (REPEATABLE READ, MySQL's consistent snapshot, SQLite mode=ro)
// whose every step has its own deadline and a watchdog that closes a
// connection the network left hanging. Errors are wrapped with the step and
// how long it took, classified by ErrorKind, and never carry a password.
//
// It knows no table: what is read, and how rows are decoded, belongs to the
// reader of each service's database (package db for Ironic's).
package dbconn

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Options tune the connection pool and the query deadlines. The zero value
// gives the defaults.
type Options struct {
	// QueryTimeout is the deadline of each step of a session (each query,
	// and getting a connection). Default 10s.
	QueryTimeout time.Duration
	// MaxOpenConns caps the pool; as many stay open between refreshes.
	// Default 2.
	MaxOpenConns int
}

// Defaults of Options.
const (
	DefaultQueryTimeout = 10 * time.Second
	DefaultMaxOpenConns = 2
)

// The pool's lifetimes: connections are recycled so that a fail-over or a
// DNS change is picked up, and a pooled connection unused for a minute is
// closed before a server's own idle timeout (PostgreSQL
// idle_session_timeout, MySQL wait_timeout) or a firewall drops it.
const (
	connMaxLifetime = 5 * time.Minute
	connMaxIdleTime = time.Minute
)

func (o Options) withDefaults() (Options, error) {
	if o.QueryTimeout < 0 || o.MaxOpenConns < 0 {
		return o, fmt.Errorf("invalid database options: negative QueryTimeout or MaxOpenConns (%+v)", o)
	}
	o.QueryTimeout = cmp.Or(o.QueryTimeout, DefaultQueryTimeout)
	o.MaxOpenConns = cmp.Or(o.MaxOpenConns, DefaultMaxOpenConns)
	return o, nil
}

// Pool is one process's connection pool to one database. It is safe for
// concurrent use and lives as long as the process.
type Pool struct {
	db       *sqlx.DB
	dialect  *dialectBase
	opts     Options
	redacted string
}

// Open parses dsn (a SQLAlchemy URL for PostgreSQL, MySQL/MariaDB or
// SQLite, a libpq URL or a libpq key=value string) and sets up the pool. It
// does not connect: a database that is down when the exporter starts shows
// up in the errors of Begin. Errors never contain the password.
func Open(dsn string, opts Options) (*Pool, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := parseDSN(dsn)
	if err != nil {
		return nil, scrub(err, passwordsIn(dsn))
	}
	sdb := sql.OpenDB(d.connector(opts))
	sdb.SetMaxOpenConns(opts.MaxOpenConns)
	sdb.SetMaxIdleConns(opts.MaxOpenConns)
	sdb.SetConnMaxLifetime(connMaxLifetime)
	sdb.SetConnMaxIdleTime(connMaxIdleTime)
	return &Pool{
		db:       sqlx.NewDb(sdb, d.facts().driver),
		dialect:  d.facts(),
		opts:     opts,
		redacted: Redact(dsn),
	}, nil
}

// String is the DSN with its password replaced by "xxxxx".
func (p *Pool) String() string { return p.redacted }

// User is the database user the pool logs in as: the DSN's, or for
// PostgreSQL libpq's default (PGUSER, the system user) when it names none;
// "" for SQLite. For logs and metrics that say which credentials are used.
func (p *Pool) User() string { return p.dialect.user }

// Backend is the kind of database server.
func (p *Pool) Backend() rules.Backend { return p.dialect.kind }

// IgnoredOptions are the names of the DSN options that the Go driver has no
// use for and that Open dropped (e.g. client_encoding, plugin, keepalives,
// charset, ssl_cipher), for a startup log line.
func (p *Pool) IgnoredOptions() []string { return slices.Clone(p.dialect.dropped) }

// Close closes the pool.
func (p *Pool) Close() error { return p.db.Close() }

// Scrub removes the DSN's secrets (password, key passphrase) from err's
// message, keeping err in the chain.
func (p *Pool) Scrub(err error) error { return scrub(err, p.dialect.secret) }

// Session is one read-only transaction on one connection of the pool: a
// consistent view of the database (REPEATABLE READ, MySQL's consistent
// snapshot, SQLite's deferred read transaction) whose steps each have a
// deadline of QueryTimeout. It is used by one goroutine and ended by End.
type Session struct {
	pool *Pool
	conn *sqlx.Conn
	tx   *sqlx.Tx
	// ctx bounds the whole transaction (steps x QueryTimeout).
	ctx    context.Context
	cancel context.CancelFunc
	// watch closes the connection's socket when a step's context ends,
	// for drivers that would otherwise block in a read (lib/pq, see
	// watchdog.go); unwatch stops the transaction's own watch.
	watch   func(context.Context) func() bool
	unwatch func() bool
}

// noWatch is the watch of connections whose driver honours contexts itself.
func noWatch(context.Context) func() bool { return func() bool { return false } }

// Begin gets a connection (within QueryTimeout) and starts a read-only
// transaction on it, which may last steps x QueryTimeout in all, whatever
// the network does: a connection whose step overran its deadline is closed
// and discarded, never reused. Errors say which step failed after how long.
func (p *Pool) Begin(ctx context.Context, steps int) (*Session, error) {
	begin := time.Now()
	cctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	conn, err := p.db.Connx(cctx)
	cancel()
	if err != nil {
		return nil, stepError(cctx, "connecting to database", begin, err)
	}
	s := &Session{pool: p, conn: conn, watch: noWatch}
	_ = conn.Raw(func(dc any) error {
		if w, ok := dc.(watchedConn); ok {
			s.watch = w.watch
		}
		return nil
	})
	// BEGIN is a step too, bounded by QueryTimeout; but database/sql ties
	// a transaction to the context BeginTx is given, so that context must
	// be the session's. A BEGIN that overruns its own deadline cancels the
	// whole session (which aborts the driver's call, or, for lib/pq, has
	// the watchdog close the socket); before, a stalled server held BEGIN
	// for the session's time, steps x QueryTimeout or the refresh timeout.
	base, cancelBase := context.WithCancel(ctx)
	tctx, cancel := context.WithTimeout(base, time.Duration(steps)*p.opts.QueryTimeout)
	s.ctx, s.cancel = tctx, func() { cancel(); cancelBase() }
	s.unwatch = s.watch(s.ctx)
	start := time.Now()
	bctx, bcancel := context.WithTimeout(s.ctx, p.opts.QueryTimeout)
	stop := context.AfterFunc(bctx, func() {
		if errors.Is(bctx.Err(), context.DeadlineExceeded) {
			cancelBase()
		}
	})
	s.tx, err = conn.BeginTxx(s.ctx, &p.dialect.tx)
	stop()
	defer bcancel()
	if err != nil {
		err = stepError(bctx, "starting read-only transaction", start, err)
		s.End(true)
		return nil, err
	}
	if bctx.Err() != nil { // BEGIN answered, but after its deadline
		s.End(true)
		return nil, stepError(bctx, "starting read-only transaction", start, bctx.Err())
	}
	return s, nil
}

// Context is the transaction's context (it ends with the session's time).
func (s *Session) Context() context.Context { return s.ctx }

// Tx is the transaction, for a reader's own statements inside Step.
func (s *Session) Tx() *sqlx.Tx { return s.tx }

// Step runs f as one step of the session: under a deadline of its own
// (QueryTimeout) and the connection watchdog, its error wrapped with the
// step's name and, when the deadline expired, the time it took.
func (s *Session) Step(step string, f func(ctx context.Context, tx *sqlx.Tx) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.ctx, s.pool.opts.QueryTimeout)
	defer cancel()
	defer s.watch(ctx)()
	if err := f(ctx, s.tx); err != nil {
		return stepError(ctx, step, start, err)
	}
	return nil
}

// Rows runs query with args as one step (Step), as a prepared statement
// when prepared, and calls row for each row it returns; an error of row
// ends the step with it.
func (s *Session) Rows(step, query string, prepared bool, row func(*sql.Rows) error, args ...any) error {
	return s.Step(step, func(ctx context.Context, tx *sqlx.Tx) error {
		var rows *sql.Rows
		var err error
		if prepared {
			var stmt *sql.Stmt
			if stmt, err = tx.PrepareContext(ctx, query); err != nil {
				return err
			}
			defer func() { _ = stmt.Close() }()
			rows, err = stmt.QueryContext(ctx, args...)
		} else {
			rows, err = tx.QueryContext(ctx, query, args...)
		}
		if err != nil {
			return err
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

// End rolls the transaction back (it is read-only: that is all there is to
// end it) and gives the connection back to the pool, or, when failed,
// discards it: whatever failed, the connection is not trusted again.
func (s *Session) End(failed bool) {
	if s.tx != nil {
		_ = s.tx.Rollback()
	}
	s.unwatch()
	s.cancel()
	if failed {
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = s.conn.Close()
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
