package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// TestProbesWithTLSAndBasicAuth runs the binary as the shipped Kubernetes
// manifests and systemd defaults do (--web.probe-listen-address beside
// --web.listen-address) with a web config that turns on both TLS and basic
// auth: the probes answer 200 without credentials, /metrics answers 401
// without them and 200 with them, and the probe port serves nothing else.
func TestProbesWithTLSAndBasicAuth(t *testing.T) {
	needDB(t) // /readyz answers 200 once a topology was read
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	pool := writeSelfSigned(t, certPath, keyPath)
	hash, err := bcrypt.GenerateFromPassword([]byte("probe-test-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, []byte(fmt.Sprintf(`tls_server_config:
  cert_file: %s
  key_file: %s
basic_auth_users:
  prometheus: %s
`, certPath, keyPath, hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := testenv.FreeAddrs(t, 2)
	addr, probeAddr := addrs[0], addrs[1]
	p := testenv.Start(t, "exporter", binary, []string{"IRONIC_EXPORTER_DB_DSN=" + dsnFor("127.0.0.1:5432")},
		"--web.listen-address="+addr, "--web.probe-listen-address="+probeAddr, "--web.config.file="+webConfig)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	get := basicGetter(t, client)
	// Wait for the probe listener (plain HTTP), then for readiness.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _ := get("http://"+probeAddr+"/readyz", "", "")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on the probe port never answered 200 (last %d)\n%s", code, p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get("http://"+probeAddr+path, "", ""); code != http.StatusOK || body != "ok\n" {
			t.Errorf("probe port %s without credentials: %d %q, want 200 \"ok\\n\"", path, code, body)
		}
	}
	for _, path := range []string{"/metrics", "/v1/conductors", "/"} {
		if code, _ := get("http://"+probeAddr+path, "", ""); code != http.StatusNotFound {
			t.Errorf("probe port %s: %d, want 404 (probes only)", path, code)
		}
	}
	if code, _ := get("https://"+addr+"/metrics", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d, want 401", code)
	}
	if code, _ := get("https://"+addr+"/healthz", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/healthz on the main port without credentials: %d, want 401 (the web config guards it)", code)
	}
	if code, body := get("https://"+addr+"/metrics", "prometheus", "probe-test-pw"); code != http.StatusOK || !strings.Contains(body, "ironic_up 1") {
		t.Errorf("/metrics with credentials: %d, ironic_up 1 present: %v", code, strings.Contains(body, "ironic_up 1"))
	}
	if code, _ := get("http://"+addr+"/metrics", "prometheus", "probe-test-pw"); code == http.StatusOK {
		t.Error("the main port answered plain HTTP with TLS configured")
	}
}

// TestReadyzRevealsNothing: a not-ready exporter answers "not ready", not
// the database error (it names the server and the user).
func TestReadyzRevealsNothing(t *testing.T) {
	dbAddr := testenv.FreeAddr(t) // nothing listens there
	probeAddr := testenv.FreeAddr(t)
	p := start(t, dsnFor(dbAddr), "--web.probe-listen-address="+probeAddr)
	for _, base := range []string{"http://" + probeAddr, "http://" + p.addr} {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || string(b) != "not ready\n" {
			t.Errorf("%s/readyz: %d %q, want 503 \"not ready\\n\"", base, resp.StatusCode, b)
		}
	}
}

func writeSelfSigned(t *testing.T, certPath, keyPath string) *x509.CertPool {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kDER, _ := x509.MarshalPKCS8PrivateKey(k)
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return pool
}

// TestTwoDoors: with --api.listen-address, Prometheus' door serves the
// metrics under --web.config.file's TLS and basic auth, and the API's door
// the JSON API under --auth.strategy with --api.config-file's TLS; neither
// serves the other's paths, and anonymous clients get neither.
func TestTwoDoors(t *testing.T) {
	needDB(t)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	pool := writeSelfSigned(t, certPath, keyPath)
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tlsConf := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", certPath, keyPath)
	webConfig := write("web.yml", tlsConf+"basic_auth_users:\n  prometheus: "+hash("scrape-pw")+"\n")
	apiConfig := write("api.yml", tlsConf)
	htpasswd := write("htpasswd", "alice:"+hash("alice-pw")+"\n")
	addrs := testenv.FreeAddrs(t, 2)
	metricsAddr, apiAddr := addrs[0], addrs[1]
	p := testenv.Start(t, "exporter", binary, []string{"IRONIC_EXPORTER_DB_DSN=" + dsnFor("127.0.0.1:5432")},
		"--web.listen-address="+metricsAddr, "--web.config.file="+webConfig, "--api.listen-address="+apiAddr,
		"--api.config-file="+apiConfig, "--auth.strategy=http_basic", "--auth.http-basic-user-file="+htpasswd)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	get := basicGetter(t, client)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _ := get("https://"+apiAddr+"/readyz", "", ""); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API door never got ready:\n%s", p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	m, a := "https://"+metricsAddr, "https://"+apiAddr
	for _, c := range []struct {
		url, user, pass string
		want            int
		body            string
	}{
		{m + "/metrics", "", "", 401, ""},
		{m + "/metrics", "alice", "alice-pw", 401, ""},
		{m + "/metrics", "prometheus", "scrape-pw", 200, "ironic_up 1"},
		{m + "/", "prometheus", "scrape-pw", 200, `href="/metrics"`},
		{m + "/v1/conductors", "prometheus", "scrape-pw", 404, ""},
		{m + "/healthz", "prometheus", "scrape-pw", 200, "ok"},
		{a + "/v1/conductors", "", "", 401, ""},
		{a + "/v1/conductors", "prometheus", "scrape-pw", 401, ""},
		{a + "/v1/conductors", "alice", "alice-pw", 200, `"conductors"`},
		{a + "/metrics", "alice", "alice-pw", 404, ""},
		{a + "/healthz", "", "", 200, "ok"},
	} {
		code, body := get(c.url, c.user, c.pass)
		if code != c.want || !strings.Contains(body, c.body) {
			t.Errorf("GET %s as %q: %d, want %d with %q\n%.300s", c.url, c.user, code, c.want, c.body, body)
		}
	}
	if code, _ := get("http://"+apiAddr+"/v1/conductors", "alice", "alice-pw"); code == http.StatusOK {
		t.Error("the API door answered plain HTTP with TLS configured")
	}
}

// TestCheckDoors: combinations that cannot work are refused at start-up,
// naming the flag.
func TestCheckDoors(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yml")
	if err := os.WriteFile(users, []byte("basic_auth_users:\n  prometheus: $2y$04$abcdefghijklmnopqrstuuv3Hq6mH4c8Q0yTnA1e3i5Pm0YQd9Zr2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.yml")
	if err := os.WriteFile(plain, []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := func(webConfig string) *web.FlagConfig {
		return &web.FlagConfig{WebListenAddresses: &[]string{":10067"}, WebConfigFile: &webConfig}
	}
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		name      string
		cfg       config
		webConfig string
		mode      string
		want      string
	}{
		{"keystone behind web basic auth", config{}, users, "keystone", "--api.listen-address"},
		{"http_basic behind web basic auth", config{}, users, "http_basic", ""},
		{"noauth behind web basic auth", config{}, users, "noauth", ""},
		{"api config without api door", config{apiConfigFile: plain}, "", "keystone", "needs --api.listen-address"},
		{"api door with users", config{apiListen: []string{":10069"}, apiConfigFile: users}, users, "keystone", "basic_auth_users must be empty"},
		{"api door", config{apiListen: []string{":10069"}, apiConfigFile: plain}, users, "keystone", ""},
		{"api door on the web address", config{apiListen: []string{":10067"}}, "", "keystone", "also a --web.listen-address"},
	} {
		err := checkDoors(c.cfg, flags(c.webConfig), c.mode, log)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestWeakTLSWarned: a tls_server_config.min_version below TLS 1.2 in
// --web.config.file or --api.config-file is warned about at start, naming
// the flag; TLS12 and the default are not.
func TestWeakTLSWarned(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certPath, keyPath)
	file := func(name, minVersion string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n%s", certPath, keyPath, minVersion)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tls10 := file("tls10.yml", "  min_version: TLS10\n")
	tls11 := file("tls11.yml", "  min_version: TLS11\n")
	tls12 := file("tls12.yml", "  min_version: TLS12\n")
	plain := file("plain.yml", "")
	for _, c := range []struct {
		web, api string
		want     []string
	}{
		{tls10, "", []string{"--web.config.file"}},
		{plain, tls11, []string{"--api.config-file"}},
		{tls11, tls10, []string{"--web.config.file", "--api.config-file"}},
		{tls12, plain, nil},
		{"", "", nil},
	} {
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, nil))
		cfg := config{}
		if c.api != "" {
			cfg = config{apiListen: []string{":10069"}, apiConfigFile: c.api}
		}
		webConfig := c.web
		if err := checkDoors(cfg, &web.FlagConfig{WebListenAddresses: &[]string{":10067"}, WebConfigFile: &webConfig}, "keystone", log); err != nil {
			t.Fatalf("%s %s: %v", c.web, c.api, err)
		}
		got := strings.Count(logs.String(), "below TLS 1.2")
		if got != len(c.want) {
			t.Errorf("web %s, api %s: %d warnings, want %d:\n%s", c.web, c.api, got, len(c.want), logs.String())
		}
		for _, flag := range c.want {
			if !strings.Contains(logs.String(), "level=WARN msg=\""+flag+": tls_server_config.min_version is below TLS 1.2") {
				t.Errorf("no warning naming %s:\n%s", flag, logs.String())
			}
		}
	}
}

// basicGetter returns a GET through client, with basic auth when user is
// not empty: the status code and body, or 0 and the error.
func basicGetter(t *testing.T, client *http.Client) func(url, user, pass string) (int, string) {
	return func(url, user, pass string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
