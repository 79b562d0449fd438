package status

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

func strp(s string) *string { return &s }

// testSnapshot: an alive and a dead conductor, a node on the alive one, a
// node no ring serves, a lock held by a gone host, and a name that needs
// escaping.
func testSnapshot() *db.Snapshot {
	now := time.Now().UTC()
	return &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		{ID: 1, Hostname: "cond-a.example.com:6385", Online: true, UpdatedAt: now.Add(-5 * time.Second), HardwareTypes: []string{"ipmi"}},
		{ID: 2, Hostname: "cond-b", ConductorGroup: "rack1", Online: true, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"redfish"}},
	}, Nodes: []*db.Node{
		{ID: 1, UUID: "11111111-1111-4111-8111-111111111111", Name: strp("web-1"), Driver: "ipmi", PowerState: strp("power on")},
		{ID: 2, UUID: "22222222-2222-4222-8222-222222222222", Name: strp("<b>x</b>"), Driver: "redfish", ConductorGroup: "rack1",
			Reservation: strp("gone-host")},
	}}
}

func newHandler(t *testing.T, src *fixture.Source) http.Handler {
	t.Helper()
	cache, err := topology.NewCache(topology.CacheConfig{Source: src,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}})
	if err != nil {
		t.Fatal(err)
	}
	return NewHandler(cache, Options{Version: "1.2.3"})
}

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Accept", "text/html")
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	return rec.Code, rec.Body.String()
}

func TestPage(t *testing.T) {
	h := newHandler(t, fixture.NewSource(testSnapshot()))
	code, body := get(t, h, "/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		`<th scope="row"><a href="/?conductor=cond-a.example.com%3A6385">cond-a.example.com:6385</a></th><td>(default)</td><td class="state alive">alive</td><td>ipmi</td>`,
		// dead: on the newest rules outside SQLite, Ironic's cleanup
		// (32.0+) fails at every run and never deletes its row
		`<th scope="row"><a href="/?conductor=cond-b">cond-b</a></th><td>rack1</td><td class="state dead">dead<br><small class="row-deletion">Ironic&#39;s stale conductor cleanup fails on this database and never deletes this row (its log: &#34;Encountered error while cleaning up stale conductors&#34;)</small></td><td>redfish</td><td class="num">1h0m</td><td class="num">0</td>`,
		`1 alive, 0 draining, 0 stopped, 1 dead; 2 nodes.`,
		`<td>(default)</td><td>ipmi</td><td class="num">1</td><td class="num">1</td><td class="num">1 / 1</td><td class="num">1.00× ideal</td>`,
		`<td>rack1</td><td>redfish</td><td class="num dead">1</td>`,
		`<td><a href="/?conductor=gone-host">gone-host</a></td><td>no such conductor</td><td class="num dead">1</td>`,
		`class="banner ok" role="status"`,
		`<label for="node">`,
		`lang="en"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Error("page loads or links external assets or scripts")
	}
	// No other site may frame the page (clickjacking).
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q lacks frame-ancestors 'none'", csp)
	}
}

func TestLookup(t *testing.T) {
	h := newHandler(t, fixture.NewSource(testSnapshot()))
	for _, ident := range []string{"web-1", "11111111-1111-4111-8111-111111111111"} {
		code, body := get(t, h, "/?node="+ident)
		if code != 200 || !strings.Contains(body, `<strong id="lookup-conductor">cond-a.example.com:6385</strong> <span class="state alive">alive</span>`) {
			t.Errorf("lookup %s: %d, no conductor in the result", ident, code)
		}
	}
	code, body := get(t, h, "/?node=22222222-2222-4222-8222-222222222222")
	if code != 200 || !strings.Contains(body, `<strong id="lookup-conductor" class="dead">none</strong>: no alive conductor serves group rack1 with driver redfish`) {
		t.Errorf("orphan lookup: %d", code)
	}
	if !strings.Contains(body, "(&lt;b&gt;x&lt;/b&gt;)") || strings.Contains(body, "<b>x</b>") {
		t.Error("node name not escaped")
	}
	code, body = get(t, h, "/?node=%3Cscript%3Ealert(1)%3C/script%3E")
	if code != 404 || strings.Contains(body, "<script>alert") || !strings.Contains(body, "No node <code>&lt;script&gt;alert(1)&lt;/script&gt;</code>") {
		t.Errorf("unknown node: %d, query not escaped or not reported", code)
	}
}

func TestPageWithoutData(t *testing.T) {
	// The database's own message (addresses, user names) stays in the logs.
	h := newHandler(t, fixture.FailingSource(&net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5432}, Err: syscall.ECONNREFUSED}))
	code, body := get(t, h, "/")
	if code != 200 || !strings.Contains(body, "<strong>No data yet.</strong>") || !strings.Contains(body, "(connection)") ||
		strings.Contains(body, "127.0.0.1") {
		t.Errorf("status %d, no explanation:\n%s", code, body)
	}
}

func TestStaleBanner(t *testing.T) {
	src := fixture.NewSource(testSnapshot())
	cache, _ := topology.NewCache(topology.CacheConfig{Source: src,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, Algorithm: ring.MD5}}})
	h := NewHandler(cache, Options{})
	get(t, h, "/")
	src.Set(nil, errors.New("database lost"))
	_, body := get(t, h, "/")
	if !strings.Contains(body, "<strong>Stale data.</strong> The last refresh failed") || !strings.Contains(body, "cond-b") {
		t.Error("stale data not flagged, or not shown")
	}
}

func TestWantsHTML(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"application/json":            false,
		"application/json, text/html": false,
		"*/*":                         false,
		"":                            false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept", accept)
		if got := WantsHTML(r); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}

// TestStuckLocksFollowRunning: the locks of a running conductor are its
// own, also where Ironic's `alive` is false for it: on SQLite 22.1+ (no
// heartbeats, alive goes false heartbeat_timeout after registering) and for
// a draining conductor on 25.0+ (online=false, still heartbeating). Only a
// host Ironic's get_offline_conductors would return (or no conductor at
// all) holds a stuck lock.
func TestStuckLocksFollowRunning(t *testing.T) {
	now := time.Now().UTC()
	for _, tc := range []struct {
		name    string
		backend rules.Backend
		release string
		conds   []db.Conductor
		stuck   []string // hosts listed as holding stuck locks
	}{
		{"sqlite 24.1", rules.SQLite, "24.1", []db.Conductor{
			{ID: 1, Hostname: "working", Online: true, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"ipmi"}},
			{ID: 2, Hostname: "stopped", Online: false, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"ipmi"}},
		}, []string{"stopped"}},
		{"postgresql 29.0", rules.PostgreSQL, "29.0", []db.Conductor{
			{ID: 1, Hostname: "draining", Online: false, UpdatedAt: now.Add(-5 * time.Second), HardwareTypes: []string{"ipmi"}},
			{ID: 2, Hostname: "dead", Online: true, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"ipmi"}},
		}, []string{"dead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := rules.ParseRelease(tc.release)
			if err != nil {
				t.Fatal(err)
			}
			snap := &db.Snapshot{Backend: tc.backend, Conductors: tc.conds}
			for i, c := range tc.conds {
				snap.Nodes = append(snap.Nodes, &db.Node{ID: int64(i + 1), UUID: fmt.Sprintf("%08d-1111-4111-8111-111111111111", i),
					Driver: "ipmi", Reservation: strp(c.Hostname)})
			}
			topo, err := topology.Build(snap, topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, Algorithm: ring.MD5}, Release: rel}, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range build(topology.View{Topology: topo, LastSuccess: now}, now, "", Options{}).Stuck {
				got = append(got, r.Host)
			}
			if strings.Join(got, ",") != strings.Join(tc.stuck, ",") {
				t.Errorf("stuck lock holders %q, want %q", got, tc.stuck)
			}
		})
	}
}
