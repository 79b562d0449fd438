package dbconn

import (
	"cmp"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The PostgreSQL dialect, on github.com/lib/pq. Ironic reaches PostgreSQL
// through psycopg2, that is libpq: the URL's parts and query options become
// libpq connection keywords, with libpq's meaning where lib/pq's differs: no
// host (nor $PGHOST) is libpq's default socket directory (/var/run/postgresql
// on Debian, Ubuntu and Red Hat; /tmp upstream), not TCP to localhost, and no
// sslmode (nor $PGSSLMODE) is "prefer", not "require". Options that mean
// something only to SQLAlchemy, psycopg2 or oslo.db, and libpq's TCP
// keepalives (Go keeps TCP connections alive itself), are dropped and
// reported by Pool.IgnoredOptions; any other option lib/pq does not take is
// an error, since lib/pq would send it to the server as a run-time parameter.

// pgKeywords are the libpq (and lib/pq) connection keywords lib/pq
// implements.
var pgKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "passfile": true, "options": true,
	"application_name": true, "fallback_application_name": true,
	"sslmode": true, "sslnegotiation": true, "sslcert": true, "sslkey": true,
	"sslrootcert": true, "sslsni": true, "ssl_min_protocol_version": true,
	"ssl_max_protocol_version": true, "krbsrvname": true, "connect_timeout": true,
	"target_session_attrs": true, "load_balance_hosts": true,
	"min_protocol_version": true, "max_protocol_version": true, "service": true,
	// lib/pq extensions, for plain lib/pq connection strings.
	"krbspn": true, "sslinline": true, "binary_parameters": true,
	"disable_prepared_binary_result": true,
}

// pgIgnored are options that are safe to drop.
var pgIgnored = map[string]bool{
	// SQLAlchemy, oslo.db and MySQL-minded settings seen in ironic.conf.
	"client_encoding": true, // lib/pq always speaks UTF8; the server converts
	"charset":         true,
	"plugin":          true, // SQLAlchemy engine plugins (devstack's dbcounter)
	// libpq TCP settings with no lib/pq equivalent.
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true,
	"keepalives_count": true,
	"sslcompression":   true, // a no-op since OpenSSL 1.1 disabled compression
	"requiressl":       true, // deprecated; mapped to sslmode=require
	"gssencmode":       true, // only "require" cannot be honoured
}

// defaultApplicationName is what pg_stat_activity shows unless the DSN names
// an application_name.
const defaultApplicationName = "ironic-conductor-exporter"

type postgres struct {
	dialectBase
	// params are the libpq keywords handed to lib/pq (tests read them).
	params map[string]string
	conn   *pgConnector
}

// pgParams collects libpq keywords; later values override earlier ones, as
// psycopg2.connect(**kwargs) lets URL query options override URL parts.
type pgParams struct {
	vals    map[string]string
	dropped []string
	// userTimeout is libpq's tcp_user_timeout, which the exporter's dialer
	// sets on its sockets (TCP_USER_TIMEOUT); 0 is the system's default.
	userTimeout time.Duration
}

func (p *pgParams) has(k string) bool { _, ok := p.vals[k]; return ok }

// option applies one option given by name in a URL query or a key=value
// string.
func (p *pgParams) option(k, v string) error {
	switch {
	case pgKeywords[k]:
		p.vals[k] = v
	case k == "gssencmode" && v == "require":
		return errors.New(`database option "gssencmode=require": GSSAPI encryption is not supported by the exporter's PostgreSQL driver`)
	case k == "requiressl":
		if v == "1" && !p.has("sslmode") {
			p.vals["sslmode"] = "require"
		}
		p.dropped = append(p.dropped, k)
	case k == "tcp_user_timeout":
		// libpq: milliseconds that transmitted data may remain
		// unacknowledged before the connection is closed; 0 keeps the
		// system's default.
		ms, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31)
		if err != nil {
			return fmt.Errorf("database option \"tcp_user_timeout=%s\": want milliseconds", v)
		}
		p.userTimeout = time.Duration(ms) * time.Millisecond
	case pgIgnored[k]:
		p.dropped = append(p.dropped, k)
	case slices.Contains([]string{"sslpassword", "sslcrl", "sslcrldir", "sslcertmode", "channel_binding",
		"require_auth", "requirepeer", "gsslib", "gssdelegation", "replication"}, k):
		return fmt.Errorf("database option %q is not supported by the exporter's PostgreSQL driver", k)
	default:
		return fmt.Errorf("unknown database option %q (not a libpq connection keyword)", k)
	}
	return nil
}

func newPostgresFromURL(u *sqlaURL) (dialect, error) {
	p := &pgParams{vals: map[string]string{}}
	if u.HasUser {
		p.vals["user"] = u.User
	}
	if u.HasPassword {
		p.vals["password"] = u.Password
	}
	setHostList(p, u.Hosts)
	if u.HasDatabase {
		p.vals["dbname"] = u.Database
	}

	var queryHosts []string
	seen := map[string]bool{}
	for _, q := range u.Query {
		if q.Key == "host" {
			queryHosts = append(queryHosts, q.Value)
			continue
		}
		if seen[q.Key] {
			return nil, fmt.Errorf("database URL option %q given more than once", q.Key)
		}
		seen[q.Key] = true
		if err := p.option(q.Key, q.Value); err != nil {
			return nil, err
		}
	}
	switch len(queryHosts) {
	case 0:
	case 1:
		// SQLAlchemy's unix socket syntax: ?host=/var/run/postgresql; also a
		// libpq comma list. Passed verbatim, as psycopg2 does.
		p.vals["host"] = queryHosts[0]
	default:
		// SQLAlchemy's multihost syntax: ?host=h1:p1&host=h2:p2.
		if seen["port"] {
			return nil, errors.New(`database URL: cannot mix "host=h1:p1&host=h2:p2" with a "port" option`)
		}
		hosts := make([]hostPort, len(queryHosts))
		for i, h := range queryHosts {
			hosts[i].Host, hosts[i].Port, _ = strings.Cut(h, ":")
		}
		delete(p.vals, "port")
		setHostList(p, hosts)
	}
	return finishPostgres(p)
}

// setHostList sets host and port from hosts, as libpq lists them
// (postgresql://h1:p1,h2:p2/db): no host when the only one is empty, and
// the ports only when any is given, the others defaulting to 5432.
func setHostList(p *pgParams, hosts []hostPort) {
	hs := make([]string, len(hosts))
	ps := make([]string, len(hosts))
	for i, h := range hosts {
		hs[i], ps[i] = h.Host, cmp.Or(h.Port, "5432")
	}
	if h := strings.Join(hs, ","); h != "" {
		p.vals["host"] = h
	}
	if slices.ContainsFunc(hosts, func(h hostPort) bool { return h.Port != "" }) {
		p.vals["port"] = strings.Join(ps, ",")
	}
}

func newPostgresFromConninfo(s string) (dialect, error) {
	pairs, err := parseConninfo(s)
	if err != nil {
		return nil, err
	}
	p := &pgParams{vals: map[string]string{}}
	for _, kv := range pairs {
		if err := p.option(kv.Key, kv.Value); err != nil {
			return nil, err
		}
	}
	return finishPostgres(p)
}

func finishPostgres(p *pgParams) (dialect, error) {
	if !p.has("host") && !p.has("hostaddr") && os.Getenv("PGHOST") == "" && os.Getenv("PGHOSTADDR") == "" {
		port, _, _ := strings.Cut(p.vals["port"], ",")
		if port == "" {
			port = os.Getenv("PGPORT")
		}
		if port == "" {
			port = "5432"
		}
		p.vals["host"] = defaultSocketDir(port)
	}
	if !p.has("sslmode") && os.Getenv("PGSSLMODE") == "" {
		p.vals["sslmode"] = "prefer"
	}
	if !p.has("application_name") && !p.has("fallback_application_name") {
		p.vals["fallback_application_name"] = defaultApplicationName
	}

	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(p.vals)) {
		pairs = append(pairs, k+"="+quoteConninfo(p.vals[k]))
	}

	secrets := []string{p.vals["password"]}
	cfg, err := pq.NewConfig(strings.Join(pairs, " "))
	if err != nil {
		return nil, scrub(fmt.Errorf("invalid PostgreSQL connection settings: %w", err), secrets)
	}
	secrets = append(secrets, cfg.Password)
	// The session itself is read-only, not only the snapshot transaction:
	// a run-time parameter of the startup packet, which lib/pq sends for
	// any key it does not know.
	if cfg.Runtime == nil {
		cfg.Runtime = map[string]string{}
	}
	cfg.Runtime["default_transaction_read_only"] = "on"
	if _, err := pq.NewConnectorConfig(cfg); err != nil {
		return nil, scrub(fmt.Errorf("invalid PostgreSQL connection settings: %w", err), secrets)
	}
	return &postgres{dialectBase: dialectBase{kind: rules.PostgreSQL, driver: "postgres", tx: repeatableReadOnly,
		secret: secrets, dropped: p.dropped, user: cfg.User}, params: p.vals, conn: &pgConnector{cfg: cfg, userTimeout: p.userTimeout}}, nil
}

// socketDirs are where libpq builds look for the server's socket by default.
var socketDirs = []string{"/var/run/postgresql", "/run/postgresql", "/tmp"}

// defaultSocketDir is the directory holding .s.PGSQL.port, or else the first
// of socketDirs that exists (the server may be down when the exporter
// starts).
func defaultSocketDir(port string) string {
	for _, d := range socketDirs {
		if _, err := os.Stat(filepath.Join(d, ".s.PGSQL."+port)); err == nil {
			return d
		}
	}
	for _, d := range socketDirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return "/tmp"
}

func (d *postgres) connector(Options) driver.Connector { return d.conn }
