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
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	get := func(url, user, pass string) (int, string) {
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
