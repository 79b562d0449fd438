package faults

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"
)

// harness is one case of the suite: a backend's database (filled with the
// fixture), a proxy in front of its server when the fault needs one, the
// exporter binary running on it, and the case's figures: the process' usage
// before the fault, the readers loading the exporter during it, the times to
// ironic_up 0 and back to 1.
type harness struct {
	*exporter
	t *testing.T
	b backend
	// admin is a superuser connection to b's database, for fixtures and
	// faults.
	admin *sql.DB
	// proxy is between the exporter and b's server; nil when the exporter
	// connects directly.
	proxy *proxy

	fig      report
	before   usage
	stopLoad func() map[string]time.Duration
}

// newHarness connects to b's database and fills it with the fixture (two
// fresh conductors, three nodes). The exporter is started by start.
func newHarness(t *testing.T, b backend) *harness {
	t.Helper()
	h := emptyHarness(t, b)
	fixture(t, h.admin, b.name == "mysql")
	return h
}

// emptyHarness connects to b's database and leaves its tables as they are.
func emptyHarness(t *testing.T, b backend) *harness {
	t.Helper()
	return &harness{t: t, b: b, admin: b.admin(t)}
}

// proxied puts a proxy, passing traffic, between b's server and the
// exporter start runs next.
func (h *harness) proxied() *proxy {
	h.t.Helper()
	h.proxy = newProxy(h.t, h.b.direct)
	return h.proxy
}

// start runs the exporter with flags on the database (through the proxy
// when there is one) and waits for ironic_up 1.
func (h *harness) start(flags ...string) *harness {
	h.t.Helper()
	addr := h.b.direct
	if h.proxy != nil {
		addr = h.proxy.addr
	}
	h.exporter = startExporter(h.t, h.b.dsn(addr), flags...)
	h.waitUp("1", 15*time.Second)
	return h
}

// The HTTP server's timeouts of the cases of hostile clients.
const (
	readTimeout  = 2 * time.Second
	writeTimeout = 3 * time.Second
	idleTimeout  = 2 * time.Second
)

// startHTTP is start with the HTTP server's timeouts above, plus flags.
func (h *harness) startHTTP(flags ...string) *harness {
	h.t.Helper()
	return h.start(append([]string{"--web.read-timeout=" + readTimeout.String(),
		"--web.write-timeout=" + writeTimeout.String(), "--web.idle-timeout=" + idleTimeout.String()}, flags...)...)
}

// baseline records what the process holds before the fault, for settle.
func (h *harness) baseline() usage {
	h.t.Helper()
	h.before = h.usage()
	return h.before
}

// settle waits for the process to give back what the fault took since the
// baseline (see settled), and returns what it holds then.
func (h *harness) settle(rssSlackMB int) usage {
	h.t.Helper()
	return h.settled(h.before, rssSlackMB)
}

// fault starts the fault named name: it records the baseline and starts the
// readers that load the exporter until finish.
func (h *harness) fault(name string) {
	h.t.Helper()
	h.baseline()
	h.stopLoad = h.load()
	h.fig = report{fault: name}
}

// down waits for ironic_up 0 within a refresh's bound and records how long
// it took.
func (h *harness) down() {
	h.t.Helper()
	h.fig.toDown = h.waitUp("0", refreshTimeout+margin)
}

// staysDown scrapes for d: ironic_up must not be 1, and no scrape may wait
// longer than a refresh. while says what the fault is, in the errors.
func (h *harness) staysDown(d time.Duration, while string) {
	h.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		v, took := h.up()
		if v == "1" {
			h.t.Errorf("ironic_up 1 %s", while)
		}
		if took > refreshTimeout+margin {
			h.t.Errorf("scrape took %s %s, want at most the refresh timeout %s (+%s)", took, while, refreshTimeout, margin)
		}
	}
}

// recovered waits for ironic_up 1 within limit and records how long it
// took.
func (h *harness) recovered(limit time.Duration) {
	h.t.Helper()
	h.fig.toRecovery = h.waitUp("1", limit)
}

// finish ends the fault: it stops the readers, checks that none waited for
// the database, logs the FIGURES line, and checks that the process gives
// back what the fault took (RSS within 64 MB of the baseline).
func (h *harness) finish() {
	h.t.Helper()
	h.fig.worst = h.stopLoad()
	checkWorst(h.t, h.fig.worst)
	h.fig.log(h.t)
	h.settle(64)
}

// lock runs stmts on an admin connection of their own (a lock the exporter
// will wait for) and returns the function running release on it. The
// release also runs at cleanup: a lock left held would block every later
// case that touches its table until the suite times out.
func (h *harness) lock(release string, stmts ...string) (unlock func()) {
	h.t.Helper()
	ctx := context.Background()
	conn, err := h.admin.Conn(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(ctx, release); err != nil {
				h.t.Errorf("%s: %v", release, err)
			}
		})
	}
	h.t.Cleanup(func() {
		unlock()
		_ = conn.Close()
	})
	for _, q := range stmts {
		// SQLite answers BUSY at once while the exporter's refresh holds
		// its read transaction (with --refresh.min-interval=0 every request
		// starts one): the lock is taken once that read ends.
		_, err := conn.ExecContext(ctx, q)
		for deadline := time.Now().Add(5 * time.Second); err != nil && strings.Contains(err.Error(), "SQLITE_BUSY") && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			_, err = conn.ExecContext(ctx, q)
		}
		if err != nil {
			h.t.Fatalf("%s: %v", q, err)
		}
	}
	return unlock
}

// metric scrapes /metrics and returns the value of the series named name
// ("" when there is none).
func (h *harness) metric(name string) string {
	h.t.Helper()
	_, body, _, _ := h.tryGet("/metrics", nil)
	return series(body, name)
}

// noRefreshFailed checks that no refresh failed so far.
func (h *harness) noRefreshFailed() {
	h.t.Helper()
	if strings.Contains(h.Logs(), "refresh failed") {
		h.t.Errorf("a refresh failed:\n%s", h.Tail(20))
	}
}
