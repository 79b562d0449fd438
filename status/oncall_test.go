package status

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// degradedSnapshot: cond-a (alive) and cond-c (alive) serve group ""; cond-b
// (dead) held the boot files of web-2, which the ring now maps to one of the
// others; a deploy waits under cond-b's lock; rack1 has no live conductor.
func degradedSnapshot() *db.Snapshot {
	s := testSnapshot()
	now := time.Now().UTC()
	s.Conductors[1].HardwareTypes = []string{"ipmi", "redfish"}
	s.Conductors = append(s.Conductors, db.Conductor{ID: 3, Hostname: "cond-c", Online: true,
		UpdatedAt: now.Add(-3 * time.Second), HardwareTypes: []string{"ipmi"}})
	fixture.SetAffinity(s.Nodes[0], 1)
	s.Nodes[0].ProvisionState = strp("active")
	s.Nodes = append(s.Nodes,
		&db.Node{ID: 3, UUID: "aaaaaaaa-3333-4333-8333-333333333333", Name: strp("web-2"), Driver: "ipmi",
			ProvisionState: strp("active"), HasConductorAffinity: true, ConductorAffinity: 2},
		&db.Node{ID: 4, UUID: "44444444-4444-4444-8444-444444444444", Name: strp("web-3"), Driver: "ipmi",
			ProvisionState: strp("wait call-back"), HasConductorAffinity: true, ConductorAffinity: 2, Reservation: strp("cond-b")})
	return s
}

type historyHandler struct {
	h     http.Handler
	cache *topology.Cache
}

func newHistoryHandler(t *testing.T, src *fixture.Source, minInterval time.Duration) historyHandler {
	t.Helper()
	hist := NewHistory(100, 50)
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, MinInterval: minInterval, OnRefresh: hist.Observe,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}})
	if err != nil {
		t.Fatal(err)
	}
	return historyHandler{NewHandler(cache, Options{Version: "1.2.3", History: hist}), cache}
}

func TestSummary(t *testing.T) {
	_, healthy := get(t, newHandler(t, fixture.NewSource(&db.Snapshot{Backend: rules.PostgreSQL,
		Conductors: testSnapshot().Conductors[:1], Nodes: testSnapshot().Nodes[:1]})), "/")
	if !strings.Contains(healthy, `id="summary" class="banner summary ok" role="status"`) || !strings.Contains(healthy, "All clear") {
		t.Error("healthy fleet: summary not green")
	}
	_, body := get(t, newHandler(t, fixture.NewSource(degradedSnapshot())), "/")
	for _, want := range []string{
		`id="summary" class="banner summary bad" role="alert"`,
		`<li class="bad"><a href="/#conductors-h">1 conductor(s) dead: online with no heartbeat (crashed, hung, or stopped without unregistering).</a></li>`,
		`<li class="bad"><a href="/#conductors-h">1 conductor group(s) without a live conductor: rack1.</a></li>`,
		`<li class="bad"><a href="/#orphans-h">1 node(s) without a conductor.</a></li>`,
		`<li class="warn"><a href="/#stuck-h">2 node(s) locked by hosts that are not running.</a></li>`,
		`<li class="warn"><a href="/#stuck-nodes-h">1 node(s) stuck in progress with no running conductor to finish.</a></li>`,
		`<li class="warn"><a href="/#stranded-h">2 node(s) with boot files on a conductor that is not running; Ironic takes over at most 8 node(s) per conductor every 3m0s: `,
		`<meta http-equiv="refresh" content="30">`,
		`<a id="refresh-toggle" href="/?refresh=off">stop refreshing</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("degraded page lacks %s", want)
		}
	}
	// Trouble first: the dead conductor's row before the alive ones.
	if strings.Index(body, `>cond-b</a></th>`) > strings.Index(body, `>cond-a.example.com:6385</a></th>`) {
		t.Error("conductor rows not sorted by trouble")
	}
	_, off := get(t, newHandler(t, fixture.NewSource(degradedSnapshot())), "/?refresh=off&node=web-1")
	if strings.Contains(off, `http-equiv="refresh"`) || !strings.Contains(off, `<input type="hidden" name="refresh" value="off">`) ||
		!strings.Contains(off, `<a id="refresh-toggle" href="/?node=web-1">refresh every 30s</a>`) {
		t.Error("refresh=off does not turn the meta refresh off, or does not keep it off")
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Error("page loads or links external assets or scripts")
	}
}

func TestLookupAffinity(t *testing.T) {
	h := newHandler(t, fixture.NewSource(degradedSnapshot()))
	code, body := get(t, h, "/?node=aaaaaaaa-3333-4333-8333-333333333333")
	topoConductor := between(body, `<strong id="lookup-conductor">`, `</strong>`)
	want := `Boot files were prepared by cond-b (dead); the ring now maps the node to ` + topoConductor + `: ` + topoConductor + ` takes it over (`
	if code != 200 || topoConductor == "" || !strings.Contains(body, want) {
		t.Errorf("lookup of web-2: %d, lacks %q", code, want)
	}
	// Any case of the UUID, and the name.
	for _, ident := range []string{"aaaaaaaa-3333-4333-8333-333333333333", "web-2", "AAAAAAAA-3333-4333-8333-333333333333"} {
		if code, b := get(t, h, "/?node="+ident); code != 200 || !strings.Contains(b, want) {
			t.Errorf("lookup %s: %d", ident, code)
		}
	}
	if code, b := get(t, h, "/?node=44444444-4444-4444-8444-444444444444"); code != 200 ||
		!strings.Contains(b, `<dd class="dead" id="lookup-stuck">locked by cond-b, which is not running</dd>`) {
		t.Errorf("stuck node lookup: %d", code)
	}
	alone := degradedSnapshot()
	alone.Conductors = alone.Conductors[:2] // cond-a alone serves ipmi
	if code, b := get(t, newHandler(t, fixture.NewSource(alone)), "/?node=web-1"); code != 200 ||
		!strings.Contains(b, "the ring maps the node to the same conductor: its files and logs are there.") {
		t.Errorf("lookup of web-1: %d, no affinity", code)
	}
}

func TestConductorPage(t *testing.T) {
	src := fixture.NewSource(testSnapshot())
	hh := newHistoryHandler(t, src, 0)
	get(t, hh.h, "/")
	back := degradedSnapshot()
	back.Conductors[1].UpdatedAt = time.Now().UTC() // cond-b comes back
	src.Set(back, nil)
	get(t, hh.h, "/")
	src.Set(degradedSnapshot(), nil)
	code, body := get(t, hh.h, "/?conductor=cond-b")
	if code != 200 {
		t.Fatalf("conductor page: %d", code)
	}
	for _, want := range []string{
		`<title>Ironic conductor cond-b</title>`,
		`<span id="c-state" class="state dead">dead</span> (online), in no hash ring`,
		`<td class="state dead">dead</td></tr>
<tr><td>`, // dead, then alive, then dead again
		`<td class="state alive">alive</td>`,
		`<h2 id="c-prepared-h">Nodes whose boot files are here</h2>`,
		`<a href="/?node=aaaaaaaa-3333-4333-8333-333333333333">web-2</a></td><td>active</td>`,
		`<a href="/?node=44444444-4444-4444-8444-444444444444">web-3</a></td><td>wait call-back</td><td></td><td><a href="/?conductor=cond-b">cond-b</a></td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("conductor page lacks %s", want)
		}
	}
	if n := strings.Count(body, `<td class="state `); n != 3 {
		t.Errorf("%d history rows, want 3 (dead, alive, dead)", n)
	}
	if code, _ := get(t, hh.h, "/?conductor=nosuch"); code != 404 {
		t.Errorf("unknown conductor: %d", code)
	}
}

func TestPageNotIronic(t *testing.T) {
	h := newHandler(t, fixture.FailingSource(errors.Join(db.ErrNotIronic, errors.New(`pq: relation "conductors" does not exist`))))
	_, body := get(t, h, "/")
	if !strings.Contains(body, "<strong>Not Ironic's database.</strong>") || !strings.Contains(body, "retrying will not help") ||
		strings.Contains(body, "last good") {
		t.Errorf("a permanent problem is not told as such:\n%s", body)
	}
}

func TestHistoryBounded(t *testing.T) {
	h := NewHistory(2, 3)
	states := []rules.State{rules.StateAlive, rules.StateDead, rules.StateAlive, rules.StateDead, rules.StateAlive}
	for i, s := range states {
		now := time.Unix(1000, 0).Add(time.Duration(i) * 2 * time.Hour).UTC()
		beat := now
		if s == rules.StateDead {
			beat = now.Add(-time.Hour)
		}
		topo, err := topology.Build(&db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
			{ID: 1, Hostname: "a", Online: true, UpdatedAt: beat},
			{ID: int64(2 + i), Hostname: string(rune('b' + i)), Online: true},
		}}, topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, Algorithm: ring.MD5}}, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.Observe(topology.Refresh{Topology: topo})
	}
	events, dropped, _ := h.Events("a")
	if len(events) != 3 || dropped != 2 || events[2].State != rules.StateAlive {
		t.Errorf("events %v, dropped %d", events, dropped)
	}
	if len(h.hosts) != 2 {
		t.Errorf("%d hosts kept, want 2", len(h.hosts))
	}
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return ""
}
