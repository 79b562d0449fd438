package dbconn

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The MySQL / MariaDB dialect (Galera included), on
// github.com/go-sql-driver/mysql. Ironic reaches MySQL through SQLAlchemy's
// mysql+pymysql (the usual one) or mysql / mysql+mysqldb (mysqlclient, i.e.
// libmysqlclient or MariaDB Connector/C). The URL's parts and the query
// options SQLAlchemy hands those drivers become a go-sql-driver Config with
// the meaning the scheme's driver gives them: the default socket or host
// (address), TLS (pymysqlTLSConfig, tlsConfig), the option file TripleO
// names (readOptionFile). Options of no use to a reader are dropped and
// reported by Pool.IgnoredOptions (the exporter always talks utf8mb4: text
// arrives as UTF-8 whatever the tables' character set); init_command and
// anything unknown are errors.
//
// Every connection is made read-only (mysqlSessionSQL: any statement that
// writes fails) and naive-UTC safe (time_zone '+00:00': Ironic's DATETIME
// columns follow no time zone, but a TIMESTAMP column or an expression
// would) when it is opened. A snapshot is a consistent-snapshot read-only
// transaction: InnoDB's read view is taken at once and the SELECTs are
// non-locking reads, so the exporter holds up neither Ironic nor a Galera
// certification.

// mysqlOptionIgnored are the options that are safe to drop.
var mysqlOptionIgnored = map[string]bool{
	"charset": true, "use_unicode": true, "collation": true, // we always read utf8mb4
	"plugin":        true, // SQLAlchemy engine plugins (devstack's dbcounter)
	"binary_prefix": true, "client_flag": true, "local_infile": true,
	"ssl_cipher": true, // Go's TLS stack chooses its cipher suites
	"sql_mode":   true, "autocommit": true, "program_name": true, "compress": true,
	"max_allowed_packet": true, "defer_connect": true, "cursorclass": true,
	"server_public_key": true, "auth_plugin_map": true, "named_pipe": true,
	"isolation_level": true, // SQLAlchemy engine option; the snapshot sets its own
	// sqlalchemy-collectd's arguments (TripleO's enable_sqlalchemy_collectd:
	// plugin=collectd), which the plugin removes from the URL.
	"collectd_host": true, "collectd_port": true, "collectd_program_name": true,
	"collectd_report_host": true, "collectd_report_ping": true,
}

// mysqlSocketPaths are where the server's unix socket usually is, the
// mysqlclient default first (Debian and Ubuntu, then Red Hat, then upstream).
var mysqlSocketPaths = []string{"/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock",
	"/var/lib/mysql/mysql.sock", "/tmp/mysql.sock"}

type mysqlDialect struct {
	dialectBase
	cfg  *mysql.Config
	conn *mysqlConnector
}

// mysqlSettings are the connection settings gathered from the URL, its
// query and an option file, before they become a mysql.Config.
type mysqlSettings struct {
	user, password, host, port, socket, database, bindAddress string
	// ssl are the ssl_* options but ssl_mode, without "ssl_": ca, capath,
	// cert, key, check_hostname, verify_cert, verify_identity, disabled.
	ssl     map[string]string
	sslMode string
	// hasSSLRaw: the URL's own "ssl" option is given, which SQLAlchemy
	// replaces by the dict of the ssl_* options when there is any.
	hasSSLRaw                                 bool
	connectTimeout, readTimeout, writeTimeout time.Duration
}

func newMySQLFromURL(u *sqlaURL) (dialect, error) {
	s := &mysqlSettings{user: u.User, password: u.Password, database: u.Database, ssl: map[string]string{}}
	d := &mysqlDialect{dialectBase: dialectBase{kind: rules.MySQL, driver: "mysql", tx: repeatableReadOnly, user: u.User}}
	switch len(u.Hosts) {
	case 0:
	case 1:
		s.host, s.port = u.Hosts[0].Host, u.Hosts[0].Port
	default:
		return nil, errors.New("database URL: MySQL takes one host (for a Galera cluster, name its load balancer or VIP)")
	}
	seen, err := s.parseOptions(u.Query, d)
	if err != nil {
		return nil, err
	}
	urlSSL := slices.ContainsFunc([]string{"ssl_ca", "ssl_key", "ssl_cert", "ssl_capath", "ssl_cipher", "ssl_check_hostname"},
		func(k string) bool { return seen[k] })
	if v, ok := s.ssl["check_hostname"]; ok {
		if _, err := sqlaBool(v); err != nil {
			return nil, fmt.Errorf("database URL option %q: %w", "ssl_check_hostname", err)
		}
	}
	if s.hasSSLRaw && urlSSL {
		// SQLAlchemy's mysqldb/pymysql create_connect_args builds
		// connect(ssl={...}) from the ssl_* options, replacing the
		// URL's "ssl" (ironic-image writes ssl=on&ssl_ca=...).
		d.dropped = append(d.dropped, "ssl")
	}
	if s.database == "" {
		return nil, errors.New("database URL names no database (mysql+pymysql://user:password@host/ironic)")
	}

	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = s.user, s.password, s.database
	if err := s.address(cfg, u.Driver == "" || u.Driver == "mysqldb"); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if u.Driver == "pymysql" {
		tlsCfg, err = s.pymysqlTLSConfig(cfg.Addr, cfg.Net, urlSSL)
	} else {
		if s.hasSSLRaw && !urlSSL {
			return nil, errors.New(`database URL option "ssl" alone is not supported: give ssl_ca (SQLAlchemy replaces "ssl" by the ssl_* options), or ssl_mode`)
		}
		tlsCfg, err = s.tlsConfig(cfg.Addr, cfg.Net)
	}
	if err != nil {
		return nil, scrub(err, []string{s.password})
	}
	cfg.TLS = tlsCfg
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = s.connectTimeout, s.readTimeout, s.writeTimeout
	cfg.Loc = time.UTC
	cfg.ParseTime = true
	cfg.Collation = "utf8mb4_general_ci"
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	cfg.AllowNativePasswords = true
	cfg.AllowCleartextPasswords = tlsCfg != nil || cfg.Net == "unix"
	cfg.CheckConnLiveness = true
	cfg.Logger = &mysql.NopLogger{}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("invalid MySQL connection settings: %w", err), []string{s.password})
	}
	d.cfg, d.conn, d.secret = cfg, &mysqlConnector{c}, []string{s.password}
	return d, nil
}

// parseOptions reads the URL's query options into s, as pymysql's and
// mysqlclient's connect arguments, then the option file they name; options
// the exporter has no use for are added to d.dropped. It returns the
// options seen.
func (s *mysqlSettings) parseOptions(query []queryOption, d *mysqlDialect) (map[string]bool, error) {
	var defaultFile, defaultGroup string
	var hasDefaultFile bool
	seen := map[string]bool{}
	for _, q := range query {
		k, v := q.Key, q.Value
		if seen[k] {
			return nil, fmt.Errorf("database URL option %q given more than once", k)
		}
		seen[k] = true
		switch k {
		case "unix_socket":
			s.socket = v
		case "user", "username":
			s.user = v
		case "password", "passwd":
			s.password = v
		case "host":
			s.host = v
		case "port":
			s.port = v
		case "db", "database":
			s.database = v
		case "ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_check_hostname", "ssl_verify_cert", "ssl_verify_identity",
			"ssl_disabled":
			s.ssl[strings.TrimPrefix(k, "ssl_")] = v
		case "ssl":
			s.hasSSLRaw = true
		case "ssl_mode":
			s.sslMode = strings.ToUpper(v)
		case "bind_address":
			s.bindAddress = v
		case "connect_timeout", "read_timeout", "write_timeout":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("database URL option %q: want a whole number of seconds", k)
			}
			*map[string]*time.Duration{"connect_timeout": &s.connectTimeout, "read_timeout": &s.readTimeout,
				"write_timeout": &s.writeTimeout}[k] = time.Duration(n) * time.Second
		case "read_default_file":
			defaultFile, hasDefaultFile = v, true
		case "read_default_group":
			defaultGroup = v
		case "init_command":
			return nil, errors.New(`database URL option "init_command" is not supported: the exporter runs no SQL but its own read-only queries`)
		case "ssl_key_password":
			return nil, errors.New(`database URL option "ssl_key_password" is not supported: give the exporter an unencrypted client key`)
		default:
			if !mysqlOptionIgnored[k] {
				return nil, fmt.Errorf("unknown database option %q for MySQL (not a pymysql or mysqlclient connect argument)", k)
			}
			d.dropped = append(d.dropped, k)
		}
	}
	if defaultGroup != "" && !hasDefaultFile {
		defaultFile = "/etc/my.cnf" // pymysql's default
	}
	if defaultFile != "" {
		if defaultGroup == "" {
			defaultGroup = "client"
		}
		if err := s.readOptionFile(defaultFile, defaultGroup); err != nil {
			return nil, scrub(err, []string{s.password})
		}
	}
	return seen, nil
}

// address sets cfg's network, address and dialer: the unix socket, or TCP
// to host and port from bind_address. mysqldb is the libmysqlclient
// driver, for which "localhost" means the default unix socket.
func (s *mysqlSettings) address(cfg *mysql.Config, mysqldb bool) error {
	switch {
	case s.socket != "":
		cfg.Net, cfg.Addr = "unix", s.socket
	case mysqldb && (s.host == "" || s.host == "localhost"):
		cfg.Net, cfg.Addr = "unix", defaultMySQLSocket()
	default:
		host, port := s.host, s.port
		if host == "" {
			host = "localhost"
		}
		if port == "" {
			port = "3306"
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return errors.New("database URL: the port must be a number from 1 to 65535")
		}
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	}
	if s.bindAddress != "" {
		ip := net.ParseIP(s.bindAddress)
		if ip == nil {
			return fmt.Errorf("database option bind_address: %q is not an IP address", s.bindAddress)
		}
		if cfg.Net == "tcp" {
			cfg.DialFunc = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext
		}
	}
	return nil
}

// defaultMySQLSocket is the first of mysqlSocketPaths that exists, else the
// first (the server may be down when the exporter starts).
func defaultMySQLSocket() string {
	for _, p := range mysqlSocketPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return mysqlSocketPaths[0]
}

// isTrue is how pymysql treats an option given as a string: anything but
// empty is set; common spellings of "no" are honoured here.
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off", "none":
		return false
	}
	return true
}

func (d *mysqlDialect) connector(Options) driver.Connector { return d.conn }

// The statements that make a connection read-only and that start and end a
// snapshot.
const (
	mysqlSessionSQL  = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
	mysqlBeginSQL    = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
	mysqlRollbackSQL = "ROLLBACK"
	mysqlCommitSQL   = "COMMIT"
)

// mysqlConnector wraps go-sql-driver's connector: each new connection is
// made read-only, and its transactions are consistent snapshots.
type mysqlConnector struct{ driver.Connector }

func (c *mysqlConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	full, err := asDriverConn(conn)
	if err != nil {
		return nil, err
	}
	if _, err := full.ExecContext(ctx, mysqlSessionSQL, nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("making the session read-only: %w", err)
	}
	return &mysqlConn{full}, nil
}

// mysqlConn forwards to go-sql-driver's connection, except that BeginTx
// starts a consistent-snapshot read-only transaction.
type mysqlConn struct{ driverConn }

var _ driverConn = (*mysqlConn)(nil)

func (c *mysqlConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if !opts.ReadOnly || (sql.IsolationLevel(opts.Isolation) != sql.LevelDefault &&
		sql.IsolationLevel(opts.Isolation) != sql.LevelRepeatableRead) {
		return nil, errors.New("the exporter's MySQL connections only run read-only REPEATABLE READ transactions")
	}
	if _, err := c.ExecContext(ctx, mysqlBeginSQL, nil); err != nil {
		return nil, err
	}
	return mysqlTx{c}, nil
}

type mysqlTx struct{ c *mysqlConn }

func (t mysqlTx) Commit() error {
	_, err := t.c.ExecContext(context.Background(), mysqlCommitSQL, nil)
	return err
}

func (t mysqlTx) Rollback() error {
	_, err := t.c.ExecContext(context.Background(), mysqlRollbackSQL, nil)
	return err
}
