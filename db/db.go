package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// Options tune the connection pool and the query deadlines. The zero value
// gives the defaults.
type Options struct {
	// QueryTimeout is the deadline of each query of a snapshot, of getting a
	// connection, and of Ping. Default 10s.
	QueryTimeout time.Duration
	// MaxOpenConns caps the pool. Default 2.
	MaxOpenConns int
	// MaxIdleConns is how many connections stay open between refreshes.
	// Default MaxOpenConns.
	MaxIdleConns int
	// ConnMaxLifetime recycles connections, so that a fail-over or a DNS
	// change is picked up. Default 5m.
	ConnMaxLifetime time.Duration
}

// Defaults of Options.
const (
	DefaultQueryTimeout    = 10 * time.Second
	DefaultMaxOpenConns    = 2
	DefaultConnMaxLifetime = 5 * time.Minute
)

func (o Options) withDefaults() (Options, error) {
	if o.QueryTimeout < 0 || o.MaxOpenConns < 0 || o.MaxIdleConns < 0 || o.ConnMaxLifetime < 0 {
		return o, errors.New("invalid database options: negative value")
	}
	if o.QueryTimeout == 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.MaxOpenConns == 0 {
		o.MaxOpenConns = DefaultMaxOpenConns
	}
	if o.MaxIdleConns == 0 || o.MaxIdleConns > o.MaxOpenConns {
		o.MaxIdleConns = o.MaxOpenConns
	}
	if o.ConnMaxLifetime == 0 {
		o.ConnMaxLifetime = DefaultConnMaxLifetime
	}
	return o, nil
}

// DB is the exporter's one connection pool to Ironic's database. It is safe
// for concurrent use and lives as long as the process.
type DB struct {
	db       *sqlx.DB
	dialect  dialect
	opts     Options
	redacted string
	// lastNodes is the node count of the last snapshot, to size the next.
	lastNodes atomic.Int64
	// ownerCols says whether nodes has owner and lessee: 0 unknown, 1 yes, 2 no.
	ownerCols atomic.Int32
}

// Open parses dsn (Ironic's [database]connection: a SQLAlchemy URL for
// PostgreSQL, MySQL/MariaDB or SQLite, a libpq URL or a libpq key=value
// string) and sets up the pool. It does not connect: a database
// that is down when the exporter starts shows up in Ping and Snapshot errors.
// Errors never contain the password.
func Open(dsn string, opts Options) (*DB, error) {
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
	sdb.SetMaxIdleConns(opts.MaxIdleConns)
	sdb.SetConnMaxLifetime(opts.ConnMaxLifetime)
	return &DB{
		db:       sqlx.NewDb(sdb, d.driverName()),
		dialect:  d,
		opts:     opts,
		redacted: Redact(dsn),
	}, nil
}

// String is the DSN with its password replaced by "xxxxx".
func (d *DB) String() string { return d.redacted }

// Backend is the kind of database server.
func (d *DB) Backend() Backend { return d.dialect.backend() }

// IgnoredOptions are the names of the DSN options that the Go driver has no
// use for and that Open dropped (e.g. client_encoding, plugin, keepalives,
// charset, ssl_cipher), for a startup log line.
func (d *DB) IgnoredOptions() []string { return slices.Clone(d.dialect.ignored()) }

// Ping checks that the database answers, within QueryTimeout.
func (d *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	if err := d.db.PingContext(ctx); err != nil {
		return d.scrub(fmt.Errorf("pinging database: %w", err))
	}
	return nil
}

// Close closes the pool.
func (d *DB) Close() error { return d.db.Close() }

func (d *DB) scrub(err error) error { return scrub(err, d.dialect.secrets()) }

// scrub replaces any secret (of 4 bytes or more: shorter ones would mangle
// the message and tell little) in err's message, keeping err in the chain
// for errors.Is and errors.As.
func scrub(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, redactedPassword)
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// passwordsIn extracts what looks like a password from a DSN that could not
// be parsed, to scrub the parse error.
func passwordsIn(dsn string) []string {
	var out []string
	if m := sqlaUserinfo.FindStringSubmatch(dsn); m != nil && m[3] != "" {
		out = append(out, m[3], pyUnquote(m[3], false))
	}
	if u, err := parseSQLAlchemyURL(dsn); err == nil {
		for _, q := range u.Query {
			if secretOptions[strings.ToLower(q.Key)] {
				out = append(out, q.Value)
			}
		}
		return out
	}
	pairs, _ := parseConninfo(dsn)
	for _, p := range pairs {
		if secretOptions[strings.ToLower(p.Key)] {
			out = append(out, p.Value)
		}
	}
	return out
}
