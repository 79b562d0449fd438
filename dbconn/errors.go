package dbconn

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/pyurl"
)

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
		out = append(out, m[3], pyurl.Unquote(m[3], false))
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

// Retryable reports whether err says the connection, not the query, failed:
// the server or the network closed it (typically while it sat idle in the
// pool), so that the same snapshot on a new connection may well work. A
// step that overran its deadline is not retried: the refresh's time is up.
func Retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		// Class 57, operator intervention: admin_shutdown (57P01,
		// pg_terminate_backend), crash_shutdown, cannot_connect_now,
		// idle_session_timeout (57P05); and 25P03
		// idle_in_transaction_session_timeout.
		return strings.HasPrefix(string(pqErr.Code), "57P") || pqErr.Code == "25P03"
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		// ER_CONNECTION_KILLED, ER_SERVER_SHUTDOWN; CR_SERVER_GONE_ERROR,
		// CR_SERVER_LOST (client-side codes, from MariaDB's connector).
		switch myErr.Number {
		case 1927, 1053, 2006, 2013, 4031:
			return true
		}
	}
	return false
}

// Error kinds of ErrorKind: bounded values for a metric label.
const (
	KindTimeout    = "timeout"
	KindConnection = "connection"
	KindAuth       = "auth"
	KindSchema     = "schema"
	KindQuery      = "query"
	KindOther      = "other"
)

// ErrorKind classifies an error of a session (or of a reader built on one) into one of the Kind
// constants, for a metric label or a generic public message; the details
// (addresses, user names) belong in logs only.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	if NoSuchRelation(err) {
		return KindSchema
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return KindTimeout
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch c := string(pqErr.Code); {
		case strings.HasPrefix(c, "28"): // invalid authorization
			return KindAuth
		case c == "3D000" || c == "42883": // no database, function
			return KindSchema
		case c == "55P03" || c == "57014": // lock_not_available, query_canceled
			return KindTimeout
		case strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P"):
			return KindConnection
		}
		return KindQuery
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1044, 1045, 1698: // access denied
			return KindAuth
		case 1049: // unknown database
			return KindSchema
		case 1205, 3024, 1969: // lock wait timeout, max_execution_time, max_statement_time
			return KindTimeout
		}
		return KindQuery
	}
	var opErr *net.OpError
	if Retryable(err) || errors.As(err, &opErr) || errors.Is(err, syscall.ECONNREFUSED) {
		return KindConnection
	}
	if m := err.Error(); strings.Contains(m, "database is locked") || strings.Contains(m, "SQLITE_BUSY") {
		return KindTimeout
	}
	return KindOther
}

// NoSuchRelation reports whether the server says a table or a column the
// reader asked for does not exist: PostgreSQL SQLSTATE 42P01
// (undefined_table) or 42703 (undefined_column), MySQL/MariaDB error 1146
// (ER_NO_SUCH_TABLE) or 1054 (ER_BAD_FIELD_ERROR), SQLite "no such table"
// or "no such column". It is the one test of "this database has not the
// schema its reader expects" (package db's ErrNotIronic); ErrorKind calls
// it schema.
func NoSuchRelation(err error) bool {
	return err != nil && (ServerSays(err, "42P01", 1146, "no such table") || ServerSays(err, "42703", 1054, "no such column"))
}

// ServerSays reports whether err is one server error, told by its
// PostgreSQL SQLSTATE (any driver with SQLState()), its MySQL/MariaDB error
// number, or, for SQLite, whose driver has no error type for it, a part of
// its message.
func ServerSays(err error, sqlState string, mysqlNumber uint16, sqliteText string) bool {
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
