package faults

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigFleet adds n nodes to the fixture, for a large /metrics (one series
// per node).
func bigFleet(t *testing.T, h *harness, n int) {
	t.Helper()
	if _, err := h.admin.Exec(`INSERT INTO nodes (uuid, name, driver, conductor_group, created_at)
		SELECT md5(i::text)::uuid::text, 'node-' || i, 'ipmi', '', now() FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
}

// TestSlowloris: clients that send their headers a byte at a time are cut
// off after --web.read-timeout.
func TestSlowloris(t *testing.T) {
	h := newHarness(t, postgres()).startHTTP()
	h.baseline()
	const n = 200
	var cut, open sync.WaitGroup
	var mu sync.Mutex
	var longest time.Duration
	worst := h.probeWorst(func() {
		for range n {
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			cut.Add(1)
			open.Add(1)
			go func() {
				defer cut.Done()
				defer c.Close()
				start := time.Now()
				_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
				open.Done()
				go func() {
					for i := 0; ; i++ {
						if _, err := fmt.Fprintf(c, "X-%d: y\r\n", i); err != nil {
							return
						}
						time.Sleep(500 * time.Millisecond)
					}
				}()
				_ = c.SetReadDeadline(time.Now().Add(readTimeout + margin))
				_, _ = io.Copy(io.Discard, c) // ends when the server closes
				mu.Lock()
				longest = max(longest, time.Since(start))
				mu.Unlock()
			}()
		}
		open.Wait()
		cut.Wait()
	})
	if longest > readTimeout+margin {
		t.Errorf("a slowloris client was kept %s", longest)
	}
	if worst > time.Second {
		t.Errorf("/healthz took %s during the slowloris", worst)
	}
	t.Logf("FIGURES slowloris (%d clients): cut after at most %s, worst /healthz %s", n, longest.Round(time.Millisecond), worst.Round(time.Millisecond))
	h.settle(32)
}

// TestNeverReadingScrapers: clients that ask for a large /metrics and never
// read it neither multiply the render's memory nor stay forever.
func TestNeverReadingScrapers(t *testing.T) {
	h := newHarness(t, postgres())
	bigFleet(t, h, 30000)
	h.startHTTP()
	_, body, _, _ := h.tryGet("/metrics", nil)
	before := h.baseline()
	const n = 60
	var conns []net.Conn
	var peak usage
	worst := h.probeWorst(func() {
		for range n {
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
			_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n")
			conns = append(conns, c)
		}
		end := time.Now().Add(writeTimeout + margin)
		for time.Now().Before(end) {
			u := h.usage()
			if u.rssKB > peak.rssKB {
				peak = u
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	for _, c := range conns {
		c.Close()
	}
	limitMB := before.rssKB/1024 + 8*len(body)>>20 + 150
	if peak.rssKB/1024 > limitMB {
		t.Errorf("RSS peaked at %d MB with %d never-reading scrapers of a %d MB /metrics (limit %d MB)", peak.rssKB/1024, n, len(body)>>20, limitMB)
	}
	if worst > 2*time.Second {
		t.Errorf("/healthz took %s", worst)
	}
	after := h.settle(400)
	t.Logf("FIGURES never-reading scrapers (%d, /metrics %d KB): RSS %d MB before, %d MB peak, %d MB after; worst /healthz %s",
		n, len(body)>>10, before.rssKB/1024, peak.rssKB/1024, after.rssKB/1024, worst.Round(time.Millisecond))
	if n := strings.Count(h.Logs(), "level=ERROR"); n > 0 {
		t.Errorf("%d ERROR lines for clients that went away:\n%s", n, h.Tail(10))
	}
}

// TestIdleKeepAlives: many idle keep-alive connections hold at most
// --web.max-connections descriptors, and are closed after the idle timeout.
func TestIdleKeepAlives(t *testing.T) {
	const maxConns = 100
	h := newHarness(t, postgres()).startHTTP(fmt.Sprintf("--web.max-connections=%d", maxConns))
	before := h.baseline()
	var conns []net.Conn
	var during usage
	worst := h.probeWorst(func() {
		for range 400 {
			c, err := net.DialTimeout("tcp", h.addr, time.Second)
			if err != nil {
				continue
			}
			conns = append(conns, c)
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		time.Sleep(500 * time.Millisecond)
		during = h.usage()
		time.Sleep(idleTimeout + time.Second)
	})
	if during.fds > before.fds+maxConns+10 {
		t.Errorf("%d fds with 400 idle connections, want at most %d more than %d", during.fds, maxConns+10, before.fds)
	}
	// The server closed the idle ones: their reads end.
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(margin))
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if _, err := r.ReadByte(); err == io.EOF {
				closed++
			}
		}
		c.Close()
	}
	if closed == 0 {
		t.Error("no idle connection was closed by the server")
	}
	t.Logf("FIGURES idle keep-alives (400, limit %d): %d fds before, %d during, %d closed by the idle timeout; worst /healthz %s",
		maxConns, before.fds, during.fds, closed, worst.Round(time.Millisecond))
	h.settle(32)
}

// TestMethodsAndPaths: probes and metrics answer 405 to other methods;
// links never follow the client's Host.
func TestMethodsAndPaths(t *testing.T) {
	h := newHarness(t, postgres()).startHTTP()
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		for _, m := range []string{"POST", "DELETE", "PUT", "PATCH", "OPTIONS"} {
			req, _ := http.NewRequest(m, "http://"+h.addr+p, nil)
			resp, err := h.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", m, p, resp.StatusCode)
			}
		}
	}
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET http://evil.example/v1/conductors HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	if strings.Contains(string(b), "evil.example") {
		t.Errorf("links follow the client's Host:\n%s", b)
	}
	// An invalid %-escape is Go's plain-text 400 (api/doc.go: a deliberate
	// difference), on the 2nd request of a keep-alive connection too.
	c2, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/nodes/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b, _ = io.ReadAll(c2)
	if !strings.HasPrefix(string(b), "HTTP/1.1 200") || !strings.Contains(string(b), "HTTP/1.1 400 Bad Request") {
		t.Errorf("GET /v1/nodes/%%zz after a keep-alive request:\n%s\nwant 200 then 400", b)
	}
	for _, v := range []string{"NaN", "-5", "+Inf", "1e309"} {
		code, _, took, err := h.tryGet("/metrics", map[string]string{"X-Prometheus-Scrape-Timeout-Seconds": v})
		if err != nil || code != 200 {
			t.Errorf("scrape timeout %q: %d %v (%s)", v, code, err, took)
		}
	}
}

// TestBadFlags: a bad flag value is a one-line error naming the flag.
func TestBadFlags(t *testing.T) {
	b := postgres()
	for _, tc := range []struct{ flag, want string }{
		{"--web.telemetry-path=/healthz", "--web.telemetry-path"},
		{"--web.telemetry-path=/", "--web.telemetry-path"},
		{"--web.telemetry-path=metrics", "--web.telemetry-path"},
		{"--db.query-timeout=-1s", "--db.query-timeout"},
		{"--web.max-requests=-1", "--web.max-requests"},
		{"--web.external-url=ftp://x", "--web.external-url"},
	} {
		cmd := exec.Command(binary, "--web.listen-address=127.0.0.1:0", tc.flag)
		cmd.Env = append(cmd.Environ(), "IRONIC_EXPORTER_DB_DSN="+b.dsn(b.direct))
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		last := lines[len(lines)-1]
		if err == nil || !strings.Contains(last, tc.want) || strings.Contains(string(out), "goroutine ") {
			t.Errorf("%s: exit %v, output:\n%s", tc.flag, err, out)
		}
	}
}

// TestFuzzEndpoints sends a bounded number of random requests; the
// exporter never answers 5xx other than 503, never drops a connection, and
// gives back what it took.
func TestFuzzEndpoints(t *testing.T) {
	h := newHarness(t, postgres()).startHTTP()
	h.baseline()
	rng := rand.New(rand.NewPCG(11, 11))
	paths := []string{"/", "/metrics", "/healthz", "/readyz", "/v1", "/v1/", "/v1/conductors", "/v1/conductors/c1",
		"/v1/nodes", "/v1/nodes/n1", "/v1/nodes/detail", "/v1/drivers", "/v1/nodes/%2e%2e", "/v1/nodes/ü", "/v1/conductors?limit=-1",
		"/v1/nodes?conductor=c1&fields=uuid,name", "/v1/nodes?marker=zz", "/v1/nodes?sort_key=%00"}
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"}
	junk := func() string {
		const chars = "az09%/?&=.;,~-_!*'()[]"
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	var worst time.Duration
	const n = 3000
	for i := range n {
		p := paths[rng.IntN(len(paths))]
		if rng.IntN(3) == 0 {
			p += junk()
		}
		req, err := http.NewRequest(methods[rng.IntN(len(methods))], "http://"+h.addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as is
		if rng.IntN(4) == 0 {
			req.Header.Set("X-OpenStack-Ironic-API-Version", []string{"1.1", "1.99", "latest", "x", "1.-1"}[rng.IntN(5)])
		}
		if rng.IntN(4) == 0 {
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", []string{"NaN", "-1", "0", "1e9", "0.001"}[rng.IntN(5)])
		}
		start := time.Now()
		resp, err := h.http.Do(req)
		took := time.Since(start)
		worst = max(worst, took)
		if err != nil {
			t.Fatalf("request %d %s %s: %v", i, req.Method, p, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// 503: a limit; 501: an Ironic resource the sidecar does not serve
		// (api.unserved), by design.
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusNotImplemented {
			t.Errorf("%s %s: %d", req.Method, p, resp.StatusCode)
		}
	}
	if worst > 2*time.Second {
		t.Errorf("worst fuzz request took %s", worst)
	}
	t.Logf("FIGURES fuzzer: %d requests, worst latency %s", n, worst.Round(time.Millisecond))
	h.settle(64)
}
