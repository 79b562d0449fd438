package dbconn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// cleanPGEnv removes the libpq environment variables that change defaults.
func cleanPGEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGSSLMODE", "PGUSER", "PGPASSWORD",
		"PGDATABASE", "PGAPPNAME", "PGSERVICE", "PGCONNECT_TIMEOUT", "PGOPTIONS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// fakeSocketDirs makes the default socket directory predictable: the first
// candidate does not exist, the second does.
func fakeSocketDirs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old := socketDirs
	socketDirs = []string{filepath.Join(dir, "missing"), dir, "/tmp"}
	t.Cleanup(func() { socketDirs = old })
	return dir
}

func TestParseDSN(t *testing.T) {
	cleanPGEnv(t)
	sock := fakeSocketDirs(t)
	const app = "ironic-conductor-exporter"
	for _, tc := range []struct {
		dsn     string
		want    map[string]string // besides the defaults below
		ignored []string
	}{
		// SQLAlchemy URLs as in ironic.conf.
		{"postgresql+psycopg2://ironic:SECRET@db.example.com:5433/ironic?sslmode=verify-full&sslrootcert=/etc/ssl/ca.pem&connect_timeout=5&application_name=x",
			map[string]string{"user": "ironic", "password": "SECRET", "host": "db.example.com", "port": "5433",
				"dbname": "ironic", "sslmode": "verify-full", "sslrootcert": "/etc/ssl/ca.pem", "connect_timeout": "5",
				"application_name": "x", "fallback_application_name": ""}, nil},
		{"postgresql://ironic:SECRET@10.0.0.5/ironic?client_encoding=utf8",
			map[string]string{"user": "ironic", "password": "SECRET", "host": "10.0.0.5", "dbname": "ironic"},
			[]string{"client_encoding"}},
		{"postgres://ironic@db/ironic",
			map[string]string{"user": "ironic", "host": "db", "dbname": "ironic"}, nil},
		{"postgresql+psycopg2://ironic:SECRET@/ironic?host=/var/run/postgresql",
			map[string]string{"user": "ironic", "password": "SECRET", "host": "/var/run/postgresql", "dbname": "ironic"}, nil},
		{"postgresql+psycopg2://ironic@localhost:5433/ironic?host=/srv/pg",
			map[string]string{"user": "ironic", "host": "/srv/pg", "port": "5433", "dbname": "ironic"}, nil},
		{"postgresql+psycopg2:///ironic",
			map[string]string{"host": sock, "dbname": "ironic"}, nil},
		{"postgresql://",
			map[string]string{"host": sock}, nil},
		{"postgresql+pg8000://u@[2001:db8::5]:6432/d",
			map[string]string{"user": "u", "host": "2001:db8::5", "port": "6432", "dbname": "d"}, nil},
		{"postgresql://u@[::1]/d",
			map[string]string{"user": "u", "host": "::1", "dbname": "d"}, nil},
		{"postgresql://u@h1:5432,h2:5433/d",
			map[string]string{"user": "u", "host": "h1,h2", "port": "5432,5433", "dbname": "d"}, nil},
		{"postgresql://u@h1,h2:5433/d",
			map[string]string{"user": "u", "host": "h1,h2", "port": "5432,5433", "dbname": "d"}, nil},
		{"postgresql+psycopg2://u@/d?host=h1:5432&host=h2:6432",
			map[string]string{"user": "u", "host": "h1,h2", "port": "5432,6432", "dbname": "d"}, nil},
		{"postgresql://u@%2Fvar%2Frun%2Fpostgresql/d",
			map[string]string{"user": "u", "host": "/var/run/postgresql", "dbname": "d"}, nil},
		{"postgresql://u@h/my%20db",
			map[string]string{"user": "u", "host": "h", "dbname": "my db"}, nil},
		{"postgresql://%C3%BCser%3Ax:pa/ss:w%3Fo%25rd%4@h/d",
			map[string]string{"user": "üser:x", "password": "pa/ss:w?o%rd%4", "host": "h", "dbname": "d"}, nil},
		{"postgresql://u:@h/d",
			map[string]string{"user": "u", "host": "h", "dbname": "d"}, nil},
		{"postgresql://u:SECRET@h/d?password=other",
			map[string]string{"user": "u", "password": "other", "host": "h", "dbname": "d"}, nil},
		{"postgresql+psycopg2://u:SECRET@h/ironic?charset=utf8&plugin=dbcounter&keepalives=1&keepalives_idle=30",
			map[string]string{"user": "u", "password": "SECRET", "host": "h", "dbname": "ironic"},
			[]string{"charset", "plugin", "keepalives", "keepalives_idle"}},
		{"postgresql://u@h/d?requiressl=1",
			map[string]string{"user": "u", "host": "h", "dbname": "d", "sslmode": "require"}, []string{"requiressl"}},
		{"postgresql://u@h/d?gssencmode=prefer&sslmode=disable",
			map[string]string{"user": "u", "host": "h", "dbname": "d", "sslmode": "disable"}, []string{"gssencmode"}},
		{"postgresql://u@h/d?options=-c+statement_timeout%3D5000&target_session_attrs=read-write",
			map[string]string{"user": "u", "host": "h", "dbname": "d", "options": "-c statement_timeout=5000",
				"target_session_attrs": "read-write"}, nil},
		{"PostgreSQL+Psycopg2://u@h/d",
			map[string]string{"user": "u", "host": "h", "dbname": "d"}, nil},
		// libpq key=value strings.
		{"host=/tmp dbname=ironic user=ironic password='it\\'s a secret'",
			map[string]string{"host": "/tmp", "dbname": "ironic", "user": "ironic", "password": "it's a secret"}, nil},
		{"  user=ironic\tdbname = ironic  ",
			map[string]string{"host": sock, "user": "ironic", "dbname": "ironic"}, nil},
		{"hostaddr=10.1.2.3 port=6543 sslmode=verify-ca application_name=''",
			map[string]string{"hostaddr": "10.1.2.3", "port": "6543", "sslmode": "verify-ca",
				"application_name": "", "fallback_application_name": ""}, nil},
	} {
		t.Run(Redact(tc.dsn), func(t *testing.T) {
			d, err := parseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			pg := d.(*postgres)
			want := map[string]string{"sslmode": "prefer", "fallback_application_name": app}
			for k, v := range tc.want {
				want[k] = v
			}
			if v, ok := want["fallback_application_name"]; ok && v == "" {
				delete(want, "fallback_application_name")
			}
			if diff := cmp.Diff(want, pg.params); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ignored, pg.dropped, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			if d.facts().kind != rules.PostgreSQL || d.facts().driver != "postgres" {
				t.Errorf("backend %s, driver %s", d.facts().kind, d.facts().driver)
			}
		})
	}
}

// TestParseDSNEnv: libpq's environment variables keep their meaning.
func TestParseDSNEnv(t *testing.T) {
	cleanPGEnv(t)
	fakeSocketDirs(t)
	t.Setenv("PGHOST", "envhost")
	t.Setenv("PGSSLMODE", "verify-full")
	d, err := parseDSN("postgresql://u@/d")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "u", "dbname": "d", "fallback_application_name": defaultApplicationName}
	if diff := cmp.Diff(want, d.(*postgres).params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}

func TestDefaultSocketDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	old := socketDirs
	t.Cleanup(func() { socketDirs = old })
	socketDirs = []string{a, b}
	if got := defaultSocketDir("5432"); got != a {
		t.Errorf("no socket anywhere: %s, want the first existing directory %s", got, a)
	}
	if err := os.WriteFile(filepath.Join(b, ".s.PGSQL.6000"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := defaultSocketDir("6000"); got != b {
		t.Errorf("socket in %s: got %s", b, got)
	}
	socketDirs = []string{filepath.Join(a, "x"), filepath.Join(b, "y")}
	if got := defaultSocketDir("5432"); got != "/tmp" {
		t.Errorf("no directory: %s, want /tmp", got)
	}
}

func TestParseDSNErrors(t *testing.T) {
	cleanPGEnv(t)
	for _, tc := range []struct{ dsn, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"nonsense", "neither a URL"},
		{"oracle://u:SECRET@h/d", `unknown database dialect "oracle"`},
		{"mysql+pymysql://u:SECRET@h/?charset=utf8", "names no database"},
		{"sqlite://", "must name the database file"},
		{"postgresql://u:SECRET@h:abc/d", "port must be a number from 1 to 65535"},
		{"postgresql://u:SECRET@h:0/d", "port must be"},
		{"postgresql://u:SECRET@h:70000/d", "port must be"},
		{"postgresql://u:SECRET@h:-1/d", "port must be"},
		{"postgresql://u:SECRET@h1:5432,h2:x/d", "port must be"},
		{"postgresql://u:p@SECRET@h/d", "'@' after the user information"},
		{"postgresql://u:SECRET@h/d@b", "'@' after the user information"},
		{"postgresql://u:SECRET@[::1/d", "unterminated '['"},
		{"postgresql://u:SECRET@[::1]x/d", "after an IPv6 host"},
		{"postgresql://u:SECRET@h/d?foo=SECRETVALUE", `unknown database option "foo"`},
		{"postgresql://u:SECRET@h/d?sslcrl=/x", `"sslcrl" is not supported`},
		{"postgresql://u:SECRET@h/d?sslpassword=SECRETKEY", `"sslpassword" is not supported`},
		{"postgresql://u:SECRET@h/d?sslmode=bogus", `pq: wrong value for "sslmode"`},
		{"postgresql://u:SECRET@h/d?sslmode=require&sslmode=disable", `"sslmode" given more than once`},
		{"postgresql://u:SECRET@h/d?gssencmode=require", "GSSAPI encryption is not supported"},
		{"postgresql://u:SECRET@h/d?connect_timeout=soon", `wrong value for "connect_timeout"`},
		{"postgresql://u:SECRET@h/d?host=h1:1&host=h2:2&port=3", "cannot mix"},
		{"postgresql://u:SECRET@h/d\n", "control character"},
		{"postgresql+://u:SECRET@h/d", "malformed scheme"},
		{"postgresql+a+b://u:SECRET@h/d", "malformed scheme"},
		{"://u:SECRET@h", "cannot parse the scheme"},
		{"postgre-sql://u:SECRET@h", "cannot parse the scheme"},
		{"host=h password='SECRET", "unterminated quoted value"},
		{"host=h password=SECRET\\", "backslash at the end"},
		{"host=h password", `missing "=" after "password"`},
		{"host=h foo=bar password=SECRET", `unknown database option "foo"`},
		{"host=h database=ironic password=SECRET", `unknown database option "database"`},
	} {
		checkOpenFails(t, tc.dsn, tc.want)
	}
}

// checkOpenFails checks, in a subtest named after the redacted DSN, that
// Open(dsn) fails with an error containing want and not the password (the
// DSNs of these tests spell it SECRET).
func checkOpenFails(t *testing.T, dsn, want string) {
	t.Helper()
	t.Run(Redact(dsn), func(t *testing.T) {
		_, err := Open(dsn, Options{})
		if err == nil {
			t.Fatalf("Open succeeded, want an error containing %q", want)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err, want)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error %q contains the password", err)
		}
	})
}

func TestOpenOptions(t *testing.T) {
	if _, err := Open("postgresql://h/d", Options{QueryTimeout: -1}); err == nil {
		t.Error("negative QueryTimeout accepted")
	}
	d, err := Open("postgresql://u:SECRET@h/d?client_encoding=utf8&plugin=dbcounter", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.opts.QueryTimeout != DefaultQueryTimeout || d.opts.MaxOpenConns != 2 {
		t.Errorf("defaults: %+v", d.opts)
	}
	if st := d.db.Stats(); st.MaxOpenConnections != 2 || st.OpenConnections != 0 {
		t.Errorf("pool stats after Open: %+v", st)
	}
	if got := d.String(); got != "postgresql://u:xxxxx@h/d?client_encoding=utf8&plugin=dbcounter" {
		t.Errorf("String() = %q", got)
	}
	if got := d.Backend(); got != rules.PostgreSQL {
		t.Errorf("Backend() = %q", got)
	}
	if diff := cmp.Diff([]string{"client_encoding", "plugin"}, d.IgnoredOptions()); diff != "" {
		t.Errorf("IgnoredOptions (-want +got):\n%s", diff)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgresql+psycopg2://ironic:SECRET@db:5432/ironic?sslmode=require",
			"postgresql+psycopg2://ironic:xxxxx@db:5432/ironic?sslmode=require"},
		{"postgresql://ironic@db/ironic", "postgresql://ironic@db/ironic"},
		{"postgresql://ironic:@db/ironic", "postgresql://ironic:@db/ironic"},
		{"postgresql://u:SE%40CRET@h/d", "postgresql://u:xxxxx@h/d"},
		{"postgresql://u:SE/CR:ET@h/d", "postgresql://u:xxxxx@h/d"},
		{"postgresql://u:SE@CR@ET@h/d", "postgresql://u:xxxxx@h/d"},
		{"postgresql://h/d?password=SECRET&sslmode=disable", "postgresql://h/d?password=xxxxx&sslmode=disable"},
		{"postgresql://u:SECRET@h/d?sslpassword=SECRET2", "postgresql://u:xxxxx@h/d?sslpassword=xxxxx"},
		{"mysql+pymysql://ironic:SECRET@db/ironic?charset=utf8", "mysql+pymysql://ironic:xxxxx@db/ironic?charset=utf8"},
		{"my-sql://u:SECRET@h/d", "my-sql://xxxxx@h/d"},
		{"host=h password=SECRET dbname=d", "host=h password=xxxxx dbname=d"},
		{"password='SEC RET' host=h", "password=xxxxx host=h"},
		{"host=h password='SEC\\'RET", "host=h password=xxxxx"},
		{"host=h password = SECRET", "host=h password = xxxxx"},
		{"u:SECRET@h", "u:xxxxx@h"},
		{"sqlite:////var/lib/ironic.sqlite", "sqlite:////var/lib/ironic.sqlite"},
		{"", ""},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Ping checks that the database answers within QueryTimeout, as a session
// connects (the tests' way to try a DSN).
func (p *Pool) Ping(ctx context.Context) error {
	s, err := p.Begin(ctx, 1)
	if err != nil {
		return p.Scrub(err)
	}
	s.End(false)
	return nil
}
