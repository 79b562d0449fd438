package faults

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// The exporter's settings in the suite: every bound below derives from them.
const (
	queryTimeout   = time.Second
	refreshTimeout = 3 * time.Second
	// margin is added to every time bound: the machine is shared and the
	// race detector may be on in the same run.
	margin = 5 * time.Second
)

// exporter is the binary running under test.
type exporter struct {
	*testenv.Process
	t    *testing.T
	addr string
	http *http.Client
}

func startExporter(t *testing.T, dsn string, flags ...string) *exporter {
	t.Helper()
	e := &exporter{t: t, addr: testenv.FreeAddr(t), http: &http.Client{Timeout: 30 * time.Second}}
	args := append([]string{"--web.listen-address=" + e.addr, "--refresh.min-interval=0s", "--log.level=debug",
		"--db.query-timeout=" + queryTimeout.String(), "--refresh.timeout=" + refreshTimeout.String()}, flags...)
	e.Process = testenv.Start(t, "exporter", binary, []string{"IRONIC_EXPORTER_DB_DSN=" + dsn}, args...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _, _, err := e.tryGet("/healthz", nil); err == nil && code == 200 {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter did not start:\n%s", e.Tail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *exporter) tryGet(path string, hdr map[string]string) (int, string, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+e.addr+path, nil)
	if err != nil {
		return 0, "", 0, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, "", time.Since(start), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start), err
}

// up scrapes /metrics as Prometheus does (10s budget) and returns ironic_up
// ("" when the scrape failed) and the scrape's latency.
func (e *exporter) up() (string, time.Duration) {
	code, body, took, err := e.tryGet("/metrics", map[string]string{"X-Prometheus-Scrape-Timeout-Seconds": "10"})
	if err != nil || code != 200 {
		return "", took
	}
	return series(body, "ironic_up"), took
}

func series(body, name string) string {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// waitUp polls ironic_up until it is want, and returns how long it took;
// it fails t after limit.
func (e *exporter) waitUp(want string, limit time.Duration) time.Duration {
	e.t.Helper()
	start := time.Now()
	for {
		if v, _ := e.up(); v == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			e.t.Fatalf("ironic_up did not become %s within %s\n%s", want, limit, e.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// usage is what the process holds.
type usage struct {
	goroutines int
	fds        int
	rssKB      int
}

func (u usage) String() string {
	return fmt.Sprintf("%d goroutines, %d fds, %d MB RSS", u.goroutines, u.fds, u.rssKB/1024)
}

func (e *exporter) usage() usage {
	e.t.Helper()
	var u usage
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", e.PID()))
	if err != nil {
		e.t.Fatal(err)
	}
	u.fds = len(ents)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.PID()))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			u.rssKB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	_, body, _, err := e.tryGet("/metrics", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	u.goroutines, _ = strconv.Atoi(series(body, "go_goroutines"))
	return u
}

// settled waits for the process to give back what a fault took: goroutines
// and fds near the baseline, RSS not grown beyond slack.
func (e *exporter) settled(before usage, rssSlackMB int) usage {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		u := e.usage()
		ok := u.goroutines <= before.goroutines+8 && u.fds <= before.fds+6 && u.rssKB <= before.rssKB+rssSlackMB*1024
		if ok {
			return u
		}
		if time.Now().After(deadline) {
			e.t.Errorf("process did not settle: before %v, after %v", before, u)
			return u
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// load runs readers of the JSON API, the status page, /readyz and a scrape
// without the timeout header until stop is called, and returns the worst
// latency seen per path.
func (e *exporter) load() (stop func() map[string]time.Duration) {
	return e.poll(request{"/v1/conductors", nil}, request{"/", map[string]string{"Accept": "text/html"}},
		request{"/readyz", nil}, request{"/metrics", nil})
}

// request is a GET of path with the headers hdr.
type request struct {
	path string
	hdr  map[string]string
}

// poll runs one reader per request, each repeating it every 50ms until stop
// is called, and returns the worst latency seen per path.
func (e *exporter) poll(reqs ...request) (stop func() map[string]time.Duration) {
	var (
		mu    sync.Mutex
		worst = map[string]time.Duration{}
		done  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for _, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				_, _, took, _ := e.tryGet(r.path, r.hdr)
				mu.Lock()
				worst[r.path] = max(worst[r.path], took)
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	return func() map[string]time.Duration {
		close(done)
		wg.Wait()
		return worst
	}
}

// probeWorst measures /healthz while f runs, and returns its worst latency.
func (e *exporter) probeWorst(f func()) time.Duration {
	stop := e.poll(request{"/healthz", nil})
	f()
	return stop()["/healthz"]
}

// report is one fault's figures.
type report struct {
	fault              string
	toDown, toRecovery time.Duration
	worst              map[string]time.Duration
}

func (r report) log(t *testing.T) {
	t.Helper()
	var w []string
	for _, p := range []string{"/v1/conductors", "/", "/readyz", "/metrics"} {
		if d, ok := r.worst[p]; ok {
			w = append(w, fmt.Sprintf("%s %s", p, d.Round(time.Millisecond)))
		}
	}
	t.Logf("FIGURES %s: ironic_up 0 after %s, recovered after %s, worst latency: %s",
		r.fault, r.toDown.Round(time.Millisecond), r.toRecovery.Round(time.Millisecond), strings.Join(w, ", "))
}

// checkWorst asserts that readers without a deadline never waited for the
// database beyond the cache's short bound.
func checkWorst(t *testing.T, worst map[string]time.Duration) {
	t.Helper()
	for p, d := range worst {
		if d > 2*time.Second {
			t.Errorf("%s took %s during the fault; readers must not wait for the database", p, d)
		}
	}
}

// waitLog waits until the log holds every one of substrs, and fails the
// test after margin.
func (e *exporter) waitLog(substrs ...string) {
	e.t.Helper()
	deadline := time.Now().Add(margin)
	for {
		logs := e.Logs()
		missing := ""
		for _, s := range substrs {
			if !strings.Contains(logs, s) {
				missing = s
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("log has no %q:\n%s", missing, e.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
