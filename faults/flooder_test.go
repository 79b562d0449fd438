package faults

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodEnv names the flood a re-run of this test binary sends instead of
// running the tests (TestMain reads it): the flood then runs in a process
// of its own, so that its goroutines do not delay the test's own
// measurements of the exporter (measured in one process, a flood of 1,000
// goroutines slows its own poller more than the exporter).
const floodEnv = "ICE_FAULTS_FLOOD"

// floodSpec is one flood: mode "handshakes" (new TLS connections, each
// closed after its handshake), "get" (GET path on keep-alive
// connections, one per sender, with basic auth when User is set), or
// "idle" and "slowloris" (holdConns), from conns senders for at most dur and at
// most max attempts in all, against addr over TLS.
type floodSpec struct {
	Mode  string        `json:"mode"`
	Addr  string        `json:"addr"`
	Path  string        `json:"path"`
	Conns int           `json:"conns"`
	Max   int64         `json:"max"`
	Dur   time.Duration `json:"dur"`
	// User and Password, when set, are sent as basic auth; a Password
	// with %d gets the attempt's number (a new bcrypt check each).
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// floodResult counts what a flood got: answers by status (0: none,
// "tls": handshakes done).
type floodResult struct {
	Codes map[string]int64 `json:"codes"`
	Took  time.Duration    `json:"took"`
}

// runFlood sends the flood of floodEnv and prints its result as JSON.
func runFlood(spec string) int {
	var s floodSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", floodEnv, err)
		return 2
	}
	var (
		mu    sync.Mutex
		codes = map[string]int64{}
		sent  atomic.Int64
		wg    sync.WaitGroup
	)
	count := func(k string) {
		mu.Lock()
		codes[k]++
		mu.Unlock()
	}
	start := time.Now()
	end := start.Add(s.Dur)
	more := func() bool { return time.Now().Before(end) && sent.Add(1) <= s.Max }
	get := func(cl *http.Client) string {
		req, _ := http.NewRequest(http.MethodGet, "https://"+s.Addr+s.Path, nil)
		if s.User != "" {
			pw := s.Password
			if strings.Contains(pw, "%d") {
				pw = fmt.Sprintf(pw, sent.Load())
			}
			req.SetBasicAuth(s.User, pw)
		}
		resp, err := cl.Do(req)
		if err != nil {
			return "0"
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return fmt.Sprint(resp.StatusCode)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's own self-signed certificate
	if s.Mode == "idle" || s.Mode == "slowloris" {
		codes["open"] = holdConns(s)
		b, _ := json.Marshal(floodResult{Codes: codes, Took: time.Since(start)})
		fmt.Println(string(b))
		return 0
	}
	for range s.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch s.Mode {
			case "handshakes":
				d := &net.Dialer{Timeout: 5 * time.Second}
				for more() {
					c, err := tls.DialWithDialer(d, "tcp", s.Addr, tlsConf)
					if err != nil {
						count("0")
						continue
					}
					count("tls")
					_ = c.Close()
				}
			case "get":
				cl := &http.Client{Timeout: 10 * time.Second,
					Transport: &http.Transport{TLSClientConfig: tlsConf, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}}
				for more() {
					count(get(cl))
				}
				cl.CloseIdleConnections()
			}
		}()
	}
	wg.Wait()
	b, _ := json.Marshal(floodResult{Codes: codes, Took: time.Since(start)})
	fmt.Println(string(b))
	return 0
}

// holdConns opens s.Conns plain connections to s.Addr (fewer when a dial
// fails), holds them for s.Dur, sending nothing (idle) or the start of a
// request and then one header byte each every 200 ms (slowloris), and
// returns how many it opened.
func holdConns(s floodSpec) int64 {
	var conns []net.Conn
	for range s.Conns {
		c, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	end := time.Now().Add(s.Dur)
	if s.Mode == "slowloris" {
		for _, c := range conns {
			_, _ = c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: "))
		}
		for time.Now().Before(end) {
			time.Sleep(200 * time.Millisecond)
			for _, c := range conns {
				_, _ = c.Write([]byte("X"))
			}
		}
	}
	time.Sleep(time.Until(end))
	for _, c := range conns {
		_ = c.Close()
	}
	return int64(len(conns))
}

// flood runs s in a new process (this test binary, by floodEnv) and
// returns what it got.
func flood(t *testing.T, s floodSpec) floodResult {
	t.Helper()
	b, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flood %s: %v\n%s", b, err, out)
	}
	var r floodResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("flood %s: %v\n%s", b, err, out)
	}
	return r
}

// writeRSACert writes a self-signed RSA-2048 certificate for 127.0.0.1 and
// a web configuration file serving it, and returns the file: RSA, as most
// certificates are, whose signature makes a server's handshake cost about a
// millisecond of CPU while the client's costs a few microseconds.
func writeRSACert(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, conf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "web.yml")
	for p, blk := range map[string][]byte{
		certPath: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPath:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		conf:     fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\n", certPath, keyPath),
	} {
		if err := os.WriteFile(p, blk, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return conf
}
