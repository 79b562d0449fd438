package dbconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// installerDSN is a connection string as an installer writes it into
// ironic.conf, with {CA}, {CERT}, {KEY}, {CNF} and {HOST} standing for the
// files and the server of the test.
type installerDSN struct {
	installer string
	source    string // repository and file that write it
	dsn       string
	// tls is the meaning PyMySQL gives it: "" (no TLS), "none" (encrypted,
	// unverified), "chain" (chain verified, name not checked) or "full".
	tls string
	// systemRoots: PyMySQL verifies against the system store only (it
	// drops ssl_ca); the exporter adds the CA to the system roots.
	systemRoots bool
}

// installerDSNs are the [database]connection strings of every installer,
// read from their templates (2026-08 heads of the repositories).
var installerDSNs = []installerDSN{
	{installer: "Metal3 ironic-image / ironic-standalone-operator, MariaDB",
		source: "metal3-io/ironic-image scripts/configure-ironic.sh (MARIADB_CONNECTION)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8"},
	{installer: "Metal3 ironic-image / ironic-standalone-operator, MariaDB with TLS",
		source: "metal3-io/ironic-image scripts/configure-ironic.sh (MARIADB_TLS_ENABLED)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8&ssl=on&ssl_ca={CA}", tls: "full"},
	{installer: "Kolla-Ansible",
		source: "openstack/kolla-ansible ansible/roles/ironic/templates/ironic.conf.j2",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic"},
	{installer: "Kolla-Ansible, database_enable_tls_internal",
		source: "openstack/kolla-ansible ansible/roles/ironic/templates/ironic.conf.j2",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?ssl_ca={CA}", tls: "full"},
	{installer: "OpenStack-Ansible",
		source: "openstack/openstack-ansible-os_ironic defaults/main.yml (ironic_db_connection_string)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8"},
	{installer: "OpenStack-Ansible, ironic_galera_use_ssl",
		source: "openstack/openstack-ansible-os_ironic defaults/main.yml (ironic_db_connection_string)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8&ssl_verify_cert=true", tls: "chain", systemRoots: true},
	{installer: "OpenStack-Ansible, ironic_galera_use_ssl and ironic_galera_ssl_ca_cert",
		source: "openstack/openstack-ansible-os_ironic defaults/main.yml (ironic_db_connection_string)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8&ssl_verify_cert=true&ssl_ca={CA}", tls: "chain", systemRoots: true},
	{installer: "TripleO",
		source: "openstack/tripleo-heat-templates deployment/ironic/ironic-base-puppet.yaml (ironic::database_connection)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?read_default_file={CNF}&read_default_group=tripleo"},
	{installer: "TripleO, enable_sqlalchemy_collectd",
		source: "openstack/tripleo-heat-templates deployment/ironic/ironic-base-puppet.yaml (ironic::database_connection)",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?read_default_file={CNF}&read_default_group=tripleo&plugin=collectd&collectd_program_name=ironic&collectd_host=localhost"},
	{installer: "openstack-helm (Secret ironic-db-user, key DB_CONNECTION)",
		source: "openstack/openstack-helm ironic/templates/secret-db.yaml, helm-toolkit/templates/endpoints/_authenticated_endpoint_uri_lookup.tpl",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic"},
	{installer: "openstack-helm, manifests.certificates (the charts' TLS suffix)",
		source: "openstack/openstack-helm cinder/templates/configmap-etc.yaml, barbican/templates/secret-db.yaml",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8&ssl_ca={CA}&ssl_key={KEY}&ssl_cert={CERT}&ssl_verify_cert", tls: "full"},
	{installer: "Bifrost",
		source: "openstack/bifrost playbooks/roles/bifrost-ironic-install/templates/ironic.conf.j2",
		dsn:    "mysql+pymysql://ironic:SECRET@{HOST}/ironic?charset=utf8"},
}

// tlsFiles are a CA, a server certificate for 127.0.0.1 and localhost, a
// client certificate and a TripleO option file.
type tlsFiles struct {
	dir, ca, srvCert, srvKey, cert, key, cnf string
}

func writeTLSFiles(t testing.TB) *tlsFiles {
	t.Helper()
	dir := t.TempDir()
	f := &tlsFiles{dir: dir, ca: filepath.Join(dir, "ca.crt"), srvCert: filepath.Join(dir, "server.crt"),
		srvKey: filepath.Join(dir, "server.key"), cert: filepath.Join(dir, "client.crt"),
		key: filepath.Join(dir, "client.key"), cnf: filepath.Join(dir, "tripleo.cnf")}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ironic-conductor-exporter test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, certPath, keyPath string, usage x509.ExtKeyUsage) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "localhost"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kDER, _ := x509.MarshalPKCS8PrivateKey(k)
		writePEM(t, certPath, "CERTIFICATE", der)
		writePEM(t, keyPath, "PRIVATE KEY", kDER)
	}
	writePEM(t, f.ca, "CERTIFICATE", caDER)
	leaf(2, f.srvCert, f.srvKey, x509.ExtKeyUsageServerAuth)
	leaf(3, f.cert, f.key, x509.ExtKeyUsageClientAuth)
	// The shape of TripleO's /etc/my.cnf.d/tripleo.cnf (puppet-tripleo
	// profile::base::database::mysql::client): a [tripleo] group.
	if err := os.WriteFile(f.cnf, []byte("[tripleo]\nbind-address=127.0.0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *tlsFiles) expand(dsn, host string) string {
	return strings.NewReplacer("{CA}", f.ca, "{CERT}", f.cert, "{KEY}", f.key, "{CNF}", f.cnf, "{HOST}", host).Replace(dsn)
}

// goTLSMode classifies the exporter's TLS configuration like installerDSN.tls.
func goTLSMode(c *tls.Config) string {
	switch {
	case c == nil:
		return ""
	case c.VerifyConnection != nil:
		return "chain"
	case c.InsecureSkipVerify:
		return "none"
	default:
		return "full"
	}
}

// pythonTLSScript prints, for each URL on stdin, what SQLAlchemy and PyMySQL
// make of it: whether TLS is on, the verify mode, check_hostname, and
// whether the URL's CA was loaded.
const pythonTLSScript = `
import json, ssl, sys
from sqlalchemy.engine import make_url
from sqlalchemy.dialects.mysql import pymysql as dialect
import pymysql
out = []
for line in sys.stdin.read().split("\n"):
    if not line:
        continue
    url = make_url(line)
    # create_engine() lets each plugin (TripleO's plugin=collectd) remove
    # its arguments; sqlalchemy-collectd removes plugin and collectd_*.
    url = url.difference_update_query([k for k in url.query if k == "plugin" or k.startswith("collectd_")])
    _, opts = dialect.dialect().create_connect_args(url)
    try:
        c = pymysql.connections.Connection(defer_connect=True, **opts)
    except Exception as e:
        out.append({"error": "%s: %s" % (type(e).__name__, e)})
        continue
    if not c.ssl:
        out.append({"tls": ""})
        continue
    ctx = c.ctx
    cas = [x["subject"] for x in ctx.get_ca_certs()]
    mode = "none"
    if ctx.verify_mode != ssl.CERT_NONE:
        mode = "full" if ctx.check_hostname else "chain"
    out.append({"tls": mode, "ca_loaded": any("test CA" in str(s) for s in cas)})
print(json.dumps(out))
`

// TestInstallerDSNs: every installer's connection string is accepted, with
// the meaning that the real SQLAlchemy and PyMySQL (Debian python3-sqlalchemy,
// python3-pymysql) give it.
func TestInstallerDSNs(t *testing.T) {
	f := writeTLSFiles(t)
	var urls []string
	for _, tc := range installerDSNs {
		urls = append(urls, f.expand(tc.dsn, "127.0.0.1:3306"))
	}
	cmd := exec.Command("/usr/bin/python3", "-c", pythonTLSScript)
	cmd.Stdin = strings.NewReader(strings.Join(urls, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 with SQLAlchemy and PyMySQL (apt-get install python3-sqlalchemy python3-pymysql): %v\n%s", err, out)
	}
	var py []struct {
		TLS      string `json:"tls"`
		CALoaded bool   `json:"ca_loaded"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(out, &py); err != nil || len(py) != len(installerDSNs) {
		t.Fatalf("python output %s: %v", out, err)
	}
	for i, tc := range installerDSNs {
		t.Run(tc.installer, func(t *testing.T) {
			if py[i].Error != "" {
				t.Fatalf("PyMySQL rejects %s: %s", Redact(urls[i]), py[i].Error)
			}
			if py[i].TLS != tc.tls {
				t.Errorf("PyMySQL TLS %q, the table says %q", py[i].TLS, tc.tls)
			}
			if tc.tls != "" && py[i].CALoaded == tc.systemRoots {
				t.Errorf("PyMySQL loaded the URL's CA: %v, the table says system roots only: %v", py[i].CALoaded, tc.systemRoots)
			}
			d, err := parseDSN(urls[i])
			if err != nil {
				t.Fatalf("%s (%s): %v", tc.installer, tc.source, err)
			}
			c := d.(*mysqlDialect).cfg
			if got := goTLSMode(c.TLS); got != tc.tls {
				t.Errorf("exporter TLS %q, PyMySQL %q", got, tc.tls)
			}
			if c.Net != "tcp" || c.Addr != "127.0.0.1:3306" || c.User != "ironic" || c.DBName != "ironic" {
				t.Errorf("net %s addr %s user %s db %s", c.Net, c.Addr, c.User, c.DBName)
			}
			if tc.tls != "" && tc.tls != "none" && strings.Contains(tc.dsn, "{CA}") {
				if sub := f.caSubject(t); c.TLS.RootCAs == nil || !poolHas(c.TLS.RootCAs, sub) {
					t.Errorf("the test CA is not among the exporter's roots")
				}
			}
		})
	}
}

func (f *tlsFiles) caSubject(t testing.TB) []byte {
	b, err := os.ReadFile(f.ca)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.RawSubject
}

func poolHas(p *x509.CertPool, subject []byte) bool {
	for _, s := range p.Subjects() { //nolint:staticcheck // fine for a test pool
		if string(s) == string(subject) {
			return true
		}
	}
	return false
}

// TestPyMySQLTLSOptionMeanings pins the surprising parts of PyMySQL's
// reading, checked against the real driver in TestInstallerDSNs' way.
func TestPyMySQLTLSOptionMeanings(t *testing.T) {
	f := writeTLSFiles(t)
	for _, tc := range []struct{ q, tls string }{
		{"ssl_disabled=false&ssl_ca={CA}", ""},                      // a non-empty string is true
		{"ssl_verify_identity=true", "none"},                        // check_hostname needs a CA
		{"ssl_verify_cert=false&ssl_ca={CA}", "none"},               // rebuilt without the CA
		{"ssl_ca={CA}&ssl_check_hostname=false", "chain"},           // SQLAlchemy's asbool
		{"ssl_cipher=ECDHE-ECDSA-AES128-GCM-SHA256", "none"},        // any ssl_* turns TLS on
		{"ssl=on&ssl_verify_cert=true", "chain"},                    // PyMySQL rebuilds the dict
		{"ssl_cert={CERT}&ssl_key={KEY}", "none"},                   // client certificate only
		{"read_default_file={CNF2}&read_default_group=tls", "full"}, // ssl-ca from the file
	} {
		cnf2 := filepath.Join(f.dir, "tls.cnf")
		if err := os.WriteFile(cnf2, []byte("[tls]\nssl-ca="+f.ca+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		url := f.expand("mysql+pymysql://ironic:SECRET@127.0.0.1/ironic?"+strings.ReplaceAll(tc.q, "{CNF2}", cnf2), "")
		cmd := exec.Command("/usr/bin/python3", "-c", pythonTLSScript)
		cmd.Stdin = strings.NewReader(url + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		var py []struct {
			TLS   string `json:"tls"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(out, &py); err != nil || len(py) != 1 || py[0].Error != "" {
			t.Fatalf("%s: python %s %v", tc.q, out, err)
		}
		d, err := parseDSN(url)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if got := goTLSMode(d.(*mysqlDialect).cfg.TLS); got != tc.tls || py[0].TLS != tc.tls {
			t.Errorf("%s: exporter %q, PyMySQL %q, want %q", tc.q, got, py[0].TLS, tc.tls)
		}
	}
	// "ssl" alone: PyMySQL fails ('str' object has no attribute 'get'), so
	// does the exporter, with a hint.
	if _, err := parseDSN("mysql+pymysql://ironic:SECRET@h/ironic?ssl=on"); err == nil || !strings.Contains(err.Error(), "ssl_ca") {
		t.Errorf("ssl=on alone: %v", err)
	}
}

// TestInstallerDSNsOverTLS connects with every TLS connection string of the
// table to a real MariaDB that requires TLS (a second mariadbd with the test
// CA's certificate, on a free port and its own data directory).
func TestInstallerDSNsOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mariadbd")
	}
	f := writeTLSFiles(t)
	addr := startTLSMariaDB(t, f)
	for _, tc := range installerDSNs {
		if tc.tls == "" {
			continue
		}
		t.Run(tc.installer, func(t *testing.T) {
			d, err := Open(f.expand(tc.dsn, addr), Options{QueryTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if tc.systemRoots && !strings.Contains(tc.dsn, "{CA}") {
				// The system store does not hold the test CA: like
				// Ironic, the exporter refuses the server.
				if err := d.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "unknown authority") {
					t.Errorf("verified against the system roots only: %v, want unknown authority", err)
				}
				return
			}
			var name, version string
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.db.QueryRowxContext(ctx, "SHOW STATUS LIKE 'Ssl_version'").Scan(&name, &version); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(version, "TLSv1.") {
				t.Errorf("Ssl_version %q", version)
			}
		})
	}
	// Without TLS the server refuses (require_secure_transport): the test
	// would notice a silently unencrypted connection.
	d, err := Open("mysql+pymysql://ironic:SECRET@"+addr+"/ironic", Options{QueryTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Ping(context.Background()); err == nil {
		t.Error("a connection without TLS was accepted")
	}
}

// startTLSMariaDB starts a mariadbd that requires TLS, with a user
// ironic/SECRET and a database ironic, and returns its host:port.
func startTLSMariaDB(t *testing.T, f *tlsFiles) string {
	t.Helper()
	testenv.Need(t, testenv.MariaDBServer)
	dir, err := os.MkdirTemp("", "ice-mariadb-tls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "mysqld.sock")
	user := []string{}
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	install := exec.Command("mariadb-install-db", append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, user...)...)
	install.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/usr/bin")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command("mariadbd", append([]string{"--no-defaults", "--datadir=" + data,
		fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1", "--socket=" + sock,
		"--ssl-cert=" + f.srvCert, "--ssl-key=" + f.srvKey, "--ssl-ca=" + f.ca,
		"--require-secure-transport=ON", "--innodb-buffer-pool-size=16M", "--skip-log-bin",
		"--log-error=" + filepath.Join(dir, "error.log")}, user...)...)
	srv.Env = install.Env
	if err := srv.Start(); err != nil {
		t.Fatalf("mariadbd: %v", err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	var admin *sqlx.DB
	deadline := time.Now().Add(60 * time.Second)
	for {
		admin, err = sqlx.Open("mysql", "root@unix("+sock+")/")
		if err == nil {
			if err = admin.Ping(); err == nil {
				break
			}
			admin.Close()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd with TLS did not come up: %v\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer admin.Close()
	for _, q := range []string{"CREATE USER 'ironic'@'%' IDENTIFIED BY 'SECRET'", "CREATE DATABASE ironic",
		"GRANT SELECT ON ironic.* TO 'ironic'@'%'"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}
