package dbconn

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/pyurl"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The SQLAlchemy URL grammar is every backend's; what its parts mean belongs
// to the dialect, one file per backend (postgres.go, mysql.go, sqlite.go).
// Errors built here quote no value of the DSN, only scheme and option names,
// so that they cannot carry a password.

// dialect is one SQL backend: how to connect and how to run the snapshot.
// Implementations do no I/O when they are built.
type dialect interface {
	// connector returns the driver connector; it must not connect. opts
	// are the pool's options (with defaults), for settings such as a busy
	// timeout that follow the query deadline.
	connector(opts Options) driver.Connector
	// facts are the dialect's fixed facts (its embedded dialectBase).
	facts() *dialectBase
}

// dialectBase is what a dialect says of itself; every dialect embeds it.
type dialectBase struct {
	kind rules.Backend
	// driver is the database/sql driver name, used by sqlx for bind
	// variables.
	driver string
	// tx are the options of the snapshot transaction.
	tx sql.TxOptions
	// secret are the values that must never appear in an error or a log
	// line (password, key passphrase).
	secret []string
	// user is the database user the connection logs in as ("" for
	// SQLite, or when the driver picks it).
	user string
	// dropped lists, by name, the options of the DSN that the Go driver has
	// no use for.
	dropped []string
}

func (b *dialectBase) facts() *dialectBase { return b }

// repeatableReadOnly is the snapshot transaction of the server backends.
var repeatableReadOnly = sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

// dialects maps the SQLAlchemy dialect name (the scheme before any "+driver")
// to the function that builds it from a parsed URL.
var dialects = map[string]func(u *sqlaURL) (dialect, error){
	"postgresql": newPostgresFromURL,
	"postgres":   newPostgresFromURL, // libpq's alias; SQLAlchemy < 1.4 too
	"mysql":      newMySQLFromURL,
	"mariadb":    newMySQLFromURL, // SQLAlchemy 1.4's MariaDB-only dialect name
	"sqlite":     newSQLiteFromURL,
}

// parseDSN picks the dialect of dsn: a SQLAlchemy URL (scheme://...) or a
// libpq key=value connection string (PostgreSQL).
func parseDSN(dsn string) (dialect, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("invalid database DSN: empty")
	}
	isURL := strings.Contains(dsn, "://")
	isControl := func(r rune) bool { return (r < 0x20 || r == 0x7f) && (isURL || !strings.ContainsRune("\t\n\v\f\r", r)) }
	if strings.IndexFunc(dsn, isControl) >= 0 {
		return nil, errors.New("invalid database DSN: contains a control character")
	}
	if !isURL {
		if strings.Contains(dsn, "=") {
			return newPostgresFromConninfo(dsn)
		}
		return nil, errors.New(`invalid database DSN: neither a URL (scheme://...) nor key=value pairs`)
	}
	u, err := parseSQLAlchemyURL(dsn)
	if err != nil {
		return nil, err
	}
	if f, ok := dialects[u.Dialect]; ok {
		return f(u)
	}
	return nil, fmt.Errorf("database URL scheme %q: unknown database dialect %q", u.Scheme, u.Dialect)
}

// sqlaURL is a parsed SQLAlchemy URL:
//
//	dialect[+driver]://[user[:password]@][host[:port]][/database][?key=value&...]
//
// The split of scheme and user information is SQLAlchemy's own regular
// expression (sqlalchemy.engine.url._parse_rfc1738_args): the password may
// contain anything but '@', user and password are percent-decoded, query
// values are form-decoded ('+' is a space). The host part additionally
// accepts libpq's comma-separated list of host[:port] and percent-encoded
// socket directories, so that plain libpq URLs parse too.
type sqlaURL struct {
	Scheme  string // "postgresql+psycopg2"
	Dialect string // "postgresql"
	Driver  string // "psycopg2", or "" when the scheme names none

	User, Password       string
	HasUser, HasPassword bool

	Hosts []hostPort // in order; empty when the URL names no host

	Database    string
	HasDatabase bool

	Query []queryOption // in order, repeated keys kept
}

type hostPort struct {
	Host string // decoded; IPv6 without brackets
	Port string // digits, or "" for the default
}

type queryOption struct {
	Key, Value string
}

// sqlaUserinfo is the start of SQLAlchemy's URL pattern, up to the host.
var sqlaUserinfo = regexp.MustCompile(`^([\w+]+)://(?:([^:/]*)(?::([^@]*))?@)?`)

func parseSQLAlchemyURL(s string) (*sqlaURL, error) {
	m := sqlaUserinfo.FindStringSubmatchIndex(s)
	if m == nil {
		return nil, errors.New("invalid database URL: cannot parse the scheme (expected dialect[+driver]://...)")
	}
	u := &sqlaURL{Scheme: s[m[2]:m[3]]}
	u.Dialect, u.Driver, _ = strings.Cut(strings.ToLower(u.Scheme), "+")
	if u.Dialect == "" || strings.Contains(u.Driver, "+") || (strings.Contains(u.Scheme, "+") && u.Driver == "") {
		return nil, fmt.Errorf("invalid database URL: malformed scheme %q", u.Scheme)
	}
	if m[4] >= 0 && m[5] > m[4] {
		u.User, u.HasUser = pyurl.Unquote(s[m[4]:m[5]], false), true
	}
	if m[6] >= 0 && m[7] > m[6] {
		u.Password, u.HasPassword = pyurl.Unquote(s[m[6]:m[7]], false), true
	}
	rest := s[m[1]:]
	if q := strings.IndexByte(rest, '?'); strings.Contains(rest[:max(q, 0)], "@") || q < 0 && strings.Contains(rest, "@") {
		// SQLAlchemy would read "user:p@ss@host" as password "p" and host
		// "ss@host": a password with a raw '@' is the usual cause.
		return nil, errors.New("invalid database URL: '@' after the user information (percent-encode '@' in the user or password as %40)")
	}

	// host[:port][,host[:port]...] up to the path or the query.
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	if err := u.parseHosts(rest[:end]); err != nil {
		return nil, err
	}
	rest = rest[end:]
	if strings.HasPrefix(rest, "/") {
		db, _, _ := strings.Cut(rest[1:], "?")
		u.Database, u.HasDatabase = pyurl.Unquote(db, false), db != ""
		rest = rest[1+len(db):]
	}
	if strings.HasPrefix(rest, "?") {
		for _, pair := range strings.Split(rest[1:], "&") {
			if pair == "" {
				continue
			}
			k, v, _ := strings.Cut(pair, "=")
			u.Query = append(u.Query, queryOption{Key: pyurl.Unquote(k, true), Value: pyurl.Unquote(v, true)})
		}
	}
	return u, nil
}

func (u *sqlaURL) parseHosts(spec string) error {
	if spec == "" {
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		var hp hostPort
		var port string
		if strings.HasPrefix(item, "[") {
			i := strings.IndexByte(item, ']')
			if i < 0 {
				return errors.New("invalid database URL: unterminated '[' in an IPv6 host")
			}
			host, rest := item[1:i], item[i+1:]
			if rest != "" && !strings.HasPrefix(rest, ":") {
				return errors.New("invalid database URL: unexpected characters after an IPv6 host")
			}
			hp.Host, port = host, strings.TrimPrefix(rest, ":")
		} else {
			host, p, _ := strings.Cut(item, ":")
			hp.Host, port = pyurl.Unquote(host, false), p
		}
		if port != "" {
			n, err := strconv.ParseUint(port, 10, 16)
			if err != nil || n == 0 {
				return errors.New("invalid database URL: the port must be a number from 1 to 65535")
			}
		}
		hp.Port = port
		u.Hosts = append(u.Hosts, hp)
	}
	return nil
}

// redactedPassword replaces every password in Redact's output.
const redactedPassword = "xxxxx"

// secretOptions are the query or key=value options whose value is a secret.
var secretOptions = map[string]bool{"password": true, "sslpassword": true, "passwd": true, "ssl_key_password": true}

// Redact returns dsn with any password replaced by "xxxxx", keeping the rest
// as written: the password of a URL's user information, and the value of a
// password (or sslpassword) option in a URL query or a key=value string. It
// works on strings that Open rejects too, so that it is safe for any log
// line.
func Redact(dsn string) string {
	if !strings.Contains(dsn, "://") {
		if strings.Contains(dsn, "=") {
			return redactConninfo(dsn)
		}
		// Not a DSN at all; "user:password@host" still gets masked.
		if i, j := strings.IndexByte(dsn, ':'), strings.LastIndex(dsn, "@"); i >= 0 && j > i {
			return dsn[:i+1] + redactedPassword + dsn[j:]
		}
		return dsn
	}
	out := dsn
	if m := sqlaUserinfo.FindStringSubmatchIndex(dsn); m != nil {
		if m[6] >= 0 && m[7] > m[6] {
			// A raw '@' in the password ends SQLAlchemy's password early;
			// mask up to the last '@' so that no part of it shows (this may
			// mask more than the password, never less).
			out = dsn[:m[6]] + redactedPassword + dsn[max(m[7], strings.LastIndex(dsn, "@")):]
		}
	} else if i := strings.LastIndex(dsn, "@"); i >= 0 {
		// Not even a scheme we can read: mask all user information.
		start := strings.Index(dsn, "://") + 3
		if start <= i {
			out = dsn[:start] + redactedPassword + dsn[i:]
		}
	}
	// Query options. The query starts at the first '?' after the host.
	hostStart := strings.Index(out, "://") + 3
	if m := sqlaUserinfo.FindStringSubmatchIndex(out); m != nil {
		hostStart = m[1]
	}
	q := strings.IndexByte(out[hostStart:], '?')
	if q < 0 {
		return out
	}
	q += hostStart + 1
	pairs := strings.Split(out[q:], "&")
	for i, pair := range pairs {
		k, _, ok := strings.Cut(pair, "=")
		if ok && secretOptions[strings.ToLower(pyurl.Unquote(k, true))] {
			pairs[i] = k + "=" + redactedPassword
		}
	}
	return out[:q] + strings.Join(pairs, "&")
}

// conninfoPair is one key=value of a libpq connection string, with the byte
// span of the value as written (quotes included).
type conninfoPair struct {
	Key, Value       string
	valStart, valEnd int
}

// parseConninfo splits a libpq key=value connection string the way libpq's
// conninfo_parse does: values may be single-quoted, a backslash escapes the
// next character. It returns the pairs read before any error, and the one
// that failed with its value running to the end (for Redact).
func parseConninfo(s string) ([]conninfoPair, error) {
	var pairs []conninfoPair
	i, n := 0, len(s)
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	skipSpace := func() {
		for i < n && space(s[i]) {
			i++
		}
	}
	for {
		skipSpace()
		if i >= n {
			return pairs, nil
		}
		start := i
		for i < n && !space(s[i]) && s[i] != '=' {
			i++
		}
		p := conninfoPair{Key: s[start:i]}
		skipSpace()
		if i >= n || s[i] != '=' {
			return pairs, fmt.Errorf("invalid connection string: missing \"=\" after %q", p.Key)
		}
		i++
		skipSpace()
		p.valStart = i
		fail := func(msg string) ([]conninfoPair, error) {
			p.valEnd = n
			return append(pairs, p), errors.New(msg)
		}
		var v strings.Builder
		if i < n && s[i] == '\'' {
			for i++; i < n && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < n {
					i++
				}
				v.WriteByte(s[i])
			}
			if i >= n {
				return fail("invalid connection string: unterminated quoted value")
			}
			i++ // the closing quote
		} else {
			for ; i < n && !space(s[i]); i++ {
				if s[i] == '\\' {
					if i+1 >= n {
						return fail("invalid connection string: backslash at the end")
					}
					i++
				}
				v.WriteByte(s[i])
			}
		}
		p.valEnd = i
		p.Value = v.String()
		pairs = append(pairs, p)
	}
}

func redactConninfo(s string) string {
	pairs, _ := parseConninfo(s)
	var b strings.Builder
	last := 0
	for _, p := range pairs {
		if secretOptions[strings.ToLower(p.Key)] && p.valEnd > p.valStart {
			b.WriteString(s[last:p.valStart])
			b.WriteString(redactedPassword)
			last = p.valEnd
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// quoteConninfo renders one value for a key=value connection string.
func quoteConninfo(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
