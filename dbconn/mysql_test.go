package dbconn

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

func TestParseMySQLDSN(t *testing.T) {
	sock := defaultMySQLSocket()
	dir := t.TempDir()
	cnf := filepath.Join(dir, "tripleo.cnf")
	if err := os.WriteFile(cnf, []byte(`# TripleO style
[client]
user = fromclient
[tripleo]
bind-address=127.0.0.1
password = "SECRET-in-file"
host=db.internal
!includedir /etc/my.cnf.d
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dsn                          string
		net, addr, user, pass, dbase string
		bind                         bool
		tls                          string // "", "skip-verify", "verify-chain", "verify-full"
		ignored                      []string
	}{
		{dsn: "mysql+pymysql://ironic:SECRET@db.example.com/ironic?charset=utf8",
			net: "tcp", addr: "db.example.com:3306", user: "ironic", pass: "SECRET", dbase: "ironic", ignored: []string{"charset"}},
		{dsn: "mysql+pymysql://ironic:S%40CRET@10.0.0.5:3307/ironic?charset=utf8&plugin=dbcounter",
			net: "tcp", addr: "10.0.0.5:3307", user: "ironic", pass: "S@CRET", dbase: "ironic", ignored: []string{"charset", "plugin"}},
		{dsn: "mysql+pymysql://ironic:SECRET@localhost/ironic",
			net: "tcp", addr: "localhost:3306", user: "ironic", pass: "SECRET", dbase: "ironic"},
		{dsn: "mysql://ironic:SECRET@localhost/ironic",
			net: "unix", addr: sock, user: "ironic", pass: "SECRET", dbase: "ironic"},
		{dsn: "mysql+mysqldb://ironic@/ironic",
			net: "unix", addr: sock, user: "ironic", dbase: "ironic"},
		{dsn: "mysql+pymysql://ironic:SECRET@/ironic?unix_socket=/var/lib/mysql/mysql.sock",
			net: "unix", addr: "/var/lib/mysql/mysql.sock", user: "ironic", pass: "SECRET", dbase: "ironic"},
		{dsn: "mariadb+pymysql://ironic:SECRET@[fd00::5]:3306/ironic",
			net: "tcp", addr: "[fd00::5]:3306", user: "ironic", pass: "SECRET", dbase: "ironic"},
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?ssl_verify_cert=false&ssl_check_hostname=false",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic", tls: "skip-verify"},
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?ssl_mode=REQUIRED",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic", tls: "skip-verify"},
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?ssl_verify_identity=true",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic", tls: "skip-verify"}, // PyMySQL: check_hostname needs a CA
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?ssl_mode=VERIFY_CA",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic", tls: "verify-chain"},
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?ssl_disabled=1&ssl_verify_cert=true",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic"},
		{dsn: "mysql+pymysql://ironic:SECRET@db/ironic?connect_timeout=5&read_timeout=30&ssl_cipher=ECDHE",
			net: "tcp", addr: "db:3306", user: "ironic", pass: "SECRET", dbase: "ironic", tls: "skip-verify", ignored: []string{"ssl_cipher"}}, // PyMySQL: any ssl_* turns TLS on
		{dsn: "mysql+pymysql://ironic@/ironic?read_default_file=" + cnf + "&read_default_group=tripleo",
			net: "tcp", addr: "db.internal:3306", user: "ironic", pass: "SECRET-in-file", dbase: "ironic", bind: true},
		{dsn: "mysql+pymysql:///ironic?read_default_file=" + cnf,
			net: "tcp", addr: "localhost:3306", user: "fromclient", dbase: "ironic"},
	} {
		t.Run(Redact(tc.dsn), func(t *testing.T) {
			d, err := parseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			my := d.(*mysqlDialect)
			c := my.cfg
			if c.Net != tc.net || c.Addr != tc.addr || c.User != tc.user || c.Passwd != tc.pass || c.DBName != tc.dbase {
				t.Errorf("net %q addr %q user %q password %q db %q", c.Net, c.Addr, c.User, c.Passwd, c.DBName)
			}
			if (c.DialFunc != nil) != tc.bind {
				t.Errorf("bind-address dialer: %v, want %v", c.DialFunc != nil, tc.bind)
			}
			var tlsMode string
			switch {
			case c.TLS == nil:
			case c.TLS.VerifyConnection != nil:
				tlsMode = "verify-chain"
			case c.TLS.InsecureSkipVerify:
				tlsMode = "skip-verify"
			default:
				tlsMode = "verify-full"
			}
			if tlsMode != tc.tls {
				t.Errorf("TLS %q, want %q", tlsMode, tc.tls)
			}
			if c.Loc != time.UTC || !c.ParseTime || c.Params["time_zone"] != "'+00:00'" {
				t.Errorf("loc %v parseTime %v params %v", c.Loc, c.ParseTime, c.Params)
			}
			if diff := cmp.Diff(tc.ignored, my.dropped, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			if d.facts().kind != rules.MySQL {
				t.Errorf("backend %s", d.facts().kind)
			}
		})
	}
}

func TestParseMySQLDSNErrors(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"mysql+pymysql://u:SECRET@h/", "names no database"},
		{"mysql+pymysql://u:SECRET@h1,h2/ironic", "one host"},
		{"mysql+pymysql://u:SECRET@h/ironic?init_command=SET+x%3D1", `"init_command" is not supported`},
		{"mysql+pymysql://u:SECRET@h/ironic?foo=bar", `unknown database option "foo"`},
		{"mysql+pymysql://u:SECRET@h/ironic?charset=utf8&charset=latin1", "given more than once"},
		{"mysql+pymysql://u:SECRET@h/ironic?connect_timeout=soon", "whole number of seconds"},
		{"mysql+pymysql://u:SECRET@h/ironic?ssl_mode=sometimes", "unknown mode"},
		{"mysql+pymysql://u:SECRET@h/ironic?ssl_mode=PREFERRED", "PREFERRED"},
		{"mysql+pymysql://u:SECRET@h/ironic?ssl_ca=/nonexistent/ca.pem", "ssl_ca"},
		{"mysql+pymysql://u:SECRET@h/ironic?ssl_key=/k.pem", "ssl_key needs ssl_cert"},
		{"mysql+pymysql://u:SECRET@h/ironic?read_default_file=/nonexistent/my.cnf", "read_default_file"},
		{"mysql+pymysql://u:SECRET@h/ironic?bind_address=eth0", "not an IP address"},
		{"mysql+pymysql://u:SECRET@h/ironic?ssl_key_password=SECRET2", "ssl_key_password"},
		{"mysql+pymysql://u@h/ironic?password=SECRET&foo=1", `unknown database option "foo"`},
	} {
		checkOpenFails(t, tc.dsn, tc.want)
	}
}

// TestMySQLSession checks, inside the snapshot transaction, that the session
// is read-only, REPEATABLE READ and UTC, and that a write fails.
