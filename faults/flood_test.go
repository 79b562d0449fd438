package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// The floods through the API's door: each runs while /metrics and /healthz
// are polled, and neither may answer anything but 200, nor take a second
// at p99. ICE_FAULTS_BINARY runs them against another build (an older one
// without --api.listen-address is measured with its one door);
// ICE_FAULTS_ONE_DOOR=1 measures this one with one door (half-sent
// requests then take the metrics' connections too: that case fails).

// floodBinary is the binary the floods run against.
func floodBinary() string { return testenv.EnvOr("ICE_FAULTS_BINARY", binary) }

// doors is one exporter with its listeners: metrics (--web.listen-address),
// api (--api.listen-address, or metrics when the build has one door) and
// probe (--web.probe-listen-address).
type doors struct {
	*testenv.Process
	metrics, api, probe string
	two                 bool
}

// startDoors starts the exporter on h's database with the API on a door of
// its own when the build has one.
func startDoors(t *testing.T, h *harness, flags ...string) *doors {
	t.Helper()
	return startDoorsNofile(t, h, 0, flags...)
}

// startDoorsNofile is startDoors with the process's descriptor limit (soft
// and hard) set to nofile first (0: inherited).
func startDoorsNofile(t *testing.T, h *harness, nofile int, flags ...string) *doors {
	t.Helper()
	help, _ := exec.Command(floodBinary(), "--help").CombinedOutput()
	addrs := testenv.FreeAddrs(t, 3)
	d := &doors{metrics: addrs[0], api: addrs[0], probe: addrs[2], two: bytes.Contains(help, []byte("--api.listen-address")) && os.Getenv("ICE_FAULTS_ONE_DOOR") == ""}
	args := []string{"--web.listen-address=" + d.metrics, "--web.probe-listen-address=" + d.probe,
		"--refresh.min-interval=1s", "--db.query-timeout=" + queryTimeout.String(), "--refresh.timeout=" + refreshTimeout.String()}
	if d.two {
		d.api = addrs[1]
		args = append(args, "--api.listen-address="+d.api)
	}
	bin, args := floodBinary(), append(args, flags...)
	if nofile > 0 {
		bin, args = "/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile), bin}, args...)
	}
	d.Process = testenv.Start(t, "exporter", bin, []string{"IRONIC_EXPORTER_DB_DSN=" + h.b.dsn(h.b.direct)}, args...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + d.metrics + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if series(string(b), "ironic_up") == "1" {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter did not start:\n%s", d.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the exporter and waits for it.
func (d *doors) stop() {
	_ = d.Signal(syscall.SIGTERM)
	select {
	case <-d.Done():
	case <-time.After(15 * time.Second):
	}
}

// latencies are one path's answers during a flood.
type latencies struct {
	took   []time.Duration
	non200 int
	// failures are the first non-200 answers, or errors, said.
	failures []string
}

func (l latencies) String() string {
	s := slices.Clone(l.took)
	slices.Sort(s)
	q := func(p float64) time.Duration {
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond)
	}
	out := fmt.Sprintf("p50 %s p99 %s max %s non-200 %d (n=%d)", q(0.5), q(0.99), q(1), l.non200, len(s))
	if len(l.failures) > 0 {
		out += fmt.Sprintf(" %q", l.failures)
	}
	return out
}

func (l latencies) p99() time.Duration {
	s := slices.Clone(l.took)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(0.99*float64(len(s))))]
}

// watched are the paths polled during a flood, by name.
func (d *doors) watched() map[string]string {
	return map[string]string{"/metrics": "http://" + d.metrics + "/metrics", "/healthz": "http://" + d.metrics + "/healthz",
		"probe /healthz": "http://" + d.probe + "/healthz"}
}

// during polls d's watched paths (two readers each, a new connection per
// request, as a scraper after a restart) while flood runs, and returns
// their latencies.
func (d *doors) during(flood func()) map[string]*latencies {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu   sync.Mutex
		out  = map[string]*latencies{}
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	for name, url := range d.watched() {
		l := &latencies{}
		out[name] = l
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					// Compressed, as Prometheus asks: the time is the
					// exporter's, not this process' gunzip (slow under -race).
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					req.Header.Set("Accept-Encoding", "gzip")
					start := time.Now()
					code, why := 0, ""
					if resp, err := c.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code, why = resp.StatusCode, resp.Status
					} else {
						why = err.Error()
					}
					took := time.Since(start)
					mu.Lock()
					l.took = append(l.took, took)
					if code != 200 {
						l.non200++
						if len(l.failures) < 3 {
							l.failures = append(l.failures, fmt.Sprintf("%s after %s", why, took.Round(time.Millisecond)))
						}
					}
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
	}
	flood()
	close(done)
	wg.Wait()
	return out
}

// report logs the FIGURES line of a flood and checks that every watched
// path answered 200 every time, with p99 under a second.
func (d *doors) report(t *testing.T, flood, extra string, got map[string]*latencies) {
	t.Helper()
	d.reportTolerating(t, flood, extra, got, "", 0)
}

// reportTolerating is report, with up to maxShare of the answers of one
// poller (tolerant) allowed to fail.
func (d *doors) reportTolerating(t *testing.T, flood, extra string, got map[string]*latencies, tolerant string, maxShare float64) {
	t.Helper()
	var parts []string
	for _, name := range []string{"/metrics", "/healthz", "probe /healthz"} {
		l := got[name]
		parts = append(parts, name+" "+l.String())
		allowed := 0
		if name == tolerant {
			allowed = int(maxShare * float64(len(l.took)))
		}
		if l.non200 > allowed || l.p99() >= time.Second || len(l.took) == 0 {
			t.Errorf("%s during %s: %s; want 200 every time (%d failures allowed), p99 under 1s", name, flood, l, allowed)
		}
	}
	t.Logf("FIGURES flood %s (doors %d): %s; %s", flood, map[bool]int{false: 1, true: 2}[d.two], strings.Join(parts, "; "), extra)
}

// hammer sends n requests built by req at concurrency c and counts the
// answers by status (0: no answer).
func hammer(n, c int, req func(i int) *http.Request) map[int]int {
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		next  = make(chan int)
		wg    sync.WaitGroup
	)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code := 0
				if resp, err := cl.Do(req(i)); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	cl.CloseIdleConnections()
	return codes
}

// TestFloods: 1,000 bad passwords at concurrency 100, 1,000 half-sent
// requests and 10 scrapers that never read, against http_basic; 1,000 junk
// tokens with a Keystone answering 3 s late.
func TestFloods(t *testing.T) {
	h := newHarness(t, postgres())
	bigFleet(t, h, 30000)
	dir := t.TempDir()
	digest, err := bcrypt.GenerateFromPassword([]byte("right"), 10)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte("admin:"+string(digest)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDoors(t, h, "--auth.strategy=http_basic", "--auth.http-basic-user-file="+htpasswd)
	d.report(t, "none", "unloaded", d.during(func() { time.Sleep(3 * time.Second) }))

	const n, conc = 1000, 100
	var codes map[int]int
	start := time.Now()
	got := d.during(func() {
		codes = hammer(n, conc, func(i int) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, "http://"+d.api+"/v1/conductors", nil)
			r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "admin:wrong-%d", i)))
			return r
		})
	})
	d.report(t, "bad-passwords", fmt.Sprintf("flood answers %v in %s", codes, time.Since(start).Round(time.Millisecond)), got)
	if codes[200] > 0 {
		t.Errorf("a bad password was let in: %v", codes)
	}

	// Half-sent requests: the request line and one header, never the end.
	got = d.during(func() {
		var conns []net.Conn
		for range n {
			c, err := net.DialTimeout("tcp", d.api, 5*time.Second)
			if err != nil {
				break
			}
			_, _ = io.WriteString(c, "GET /v1/conductors HTTP/1.1\r\nHost: x\r\n")
			conns = append(conns, c)
		}
		time.Sleep(5 * time.Second)
		for _, c := range conns {
			c.Close()
		}
	})
	d.report(t, "half-sent", fmt.Sprintf("%d connections held 5s", n), got)

	// Scrapers that never read a /metrics larger than the socket buffers.
	got = d.during(func() {
		var conns []net.Conn
		for range 10 {
			c, err := net.Dial("tcp", d.metrics)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
			_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n")
			conns = append(conns, c)
		}
		time.Sleep(8 * time.Second)
		for _, c := range conns {
			c.Close()
		}
	})
	d.report(t, "never-reading", "10 scrapers held 8s", got)
	d.stop()

	// Keystone answering every request 3 s late.
	const late = 3 * time.Second
	var validations, passwords sync.Map
	ks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(late):
		case <-r.Context().Done():
			return
		}
		if r.Method == http.MethodPost {
			passwords.Store(time.Now(), true)
			w.Header().Set("X-Subject-Token", "svc-token")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token": {"expires_at": %q}}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		validations.Store(r.Header.Get("X-Subject-Token"), true)
		http.Error(w, `{"error": {"code": 404}}`, http.StatusNotFound)
	}))
	defer func() {
		ks.CloseClientConnections()
		ks.Close()
	}()
	pw := filepath.Join(dir, "ks-password")
	if err := os.WriteFile(pw, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDoors(t, h, "--auth.strategy=keystone", "--auth.keystone.auth-url="+ks.URL+"/v3",
		"--auth.keystone.username=ironic", "--auth.keystone.password-file="+pw, "--auth.keystone.project-name=service")
	start = time.Now()
	got = d.during(func() {
		codes = hammer(n, conc, func(i int) *http.Request {
			r, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+d.api+"/v1/conductors", nil)
			r.Header.Set("X-Auth-Token", fmt.Sprintf("junk-%d", i))
			return r
		})
	})
	nv, np := 0, 0
	validations.Range(func(any, any) bool { nv++; return true })
	passwords.Range(func(any, any) bool { np++; return true })
	d.report(t, "junk-tokens", fmt.Sprintf("Keystone %s late: flood answers %v in %s, %d tokens validated, %d service-token requests",
		late, codes, time.Since(start).Round(time.Millisecond), nv, np), got)
	if codes[200] > 0 {
		t.Errorf("a junk token was let in: %v", codes)
	}
	d.stop()
}
