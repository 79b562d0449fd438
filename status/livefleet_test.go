package status

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// liveFleetSnapshot is what real conductors leave behind (the newest
// release, detected): c2:8090 runs and locks its deploy as "c2"; c3:8090
// crashed holding "c3"; c1 stopped (SIGTERM) and left a tear-down in
// deleting with no lock and no worker.
func liveFleetSnapshot() *db.Snapshot {
	now := time.Now().UTC()
	node := func(id int64, uuid, name, state, reservation string, changed time.Duration) *db.Node {
		n := &db.Node{ID: id, UUID: uuid, Name: strp(name), Driver: "fake-hardware", ProvisionState: strp(state),
			UpdatedAt: db.StampOf(now.Add(-changed))}
		if reservation != "" {
			n.Reservation = strp(reservation)
		}
		return n
	}
	return &db.Snapshot{Backend: rules.MySQL, Conductors: []db.Conductor{
		{ID: 1, Hostname: "c1", Online: false, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"fake-hardware"}},
		{ID: 2, Hostname: "c2:8090", Online: true, UpdatedAt: now.Add(-time.Second), HardwareTypes: []string{"fake-hardware"}},
		{ID: 3, Hostname: "c3:8090", Online: true, UpdatedAt: now.Add(-time.Hour), HardwareTypes: []string{"fake-hardware"}},
	}, Nodes: []*db.Node{
		node(1, "bbbbbbbb-0000-4000-8000-000000000001", "deploy-1", "deploying", "c2", time.Second),
		node(2, "bbbbbbbb-0000-4000-8000-000000000002", "deploy-2", "deploying", "c3", time.Hour),
		node(3, "bbbbbbbb-0000-4000-8000-000000000003", "teardown-3", "deleting", "", 10*time.Minute),
	}}
}

// TestPageLiveFleet: a working HOST:PORT conductor's HOST lock is its own,
// not a lock of a host that is not running; a dead one's is told as a lock
// Ironic never releases; a step with no lock and no worker is stuck; a
// stopped conductor is never "All clear".
func TestPageLiveFleet(t *testing.T) {
	_, body := get(t, newHandler(t, fixture.NewSource(liveFleetSnapshot())), "/")
	body = html.UnescapeString(body)
	for _, want := range []string{
		"2 node(s) stuck in progress with no running conductor to finish (1 locked by a HOST:PORT conductor that is not running, which Ironic never releases; 1 with no lock and no worker",
		"1 conductor(s) stopped.",
		"1 node(s) locked by hosts that are not running.",
		"conductor dead; its locks name c3, which Ironic never releases",
		"locked as c3 by c3:8090, which is not running: Ironic compares exact names and never releases this lock",
		"no lock and no worker: nothing resumes deleting until a conductor mapping it (re)starts and fails it (restart c2:8090)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "All clear") || strings.Contains(body, "locked by c2,") {
		t.Error("page says all clear, or calls c2:8090's own lock one of a host not running")
	}

	// only a stopped conductor: still not all clear
	s := liveFleetSnapshot()
	s.Conductors[2].UpdatedAt = s.Conductors[1].UpdatedAt
	s.Nodes = s.Nodes[:1]
	_, body = get(t, newHandler(t, fixture.NewSource(s)), "/")
	if strings.Contains(body, "All clear") || !strings.Contains(body, "1 conductor(s) stopped.") {
		t.Error("one conductor stopped: the page says all clear")
	}
	// no stopped conductor, no stuck node: all clear
	s.Conductors = s.Conductors[1:]
	if _, body = get(t, newHandler(t, fixture.NewSource(s)), "/"); !strings.Contains(body, "All clear") {
		t.Error("healthy HOST:PORT fleet: not all clear")
	}
}

// TestLookupNoAffinityTakeover: an active node whose conductor_affinity is
// NULL is taken over as any other (_sync_local_state's predicate: None !=
// id), at Ironic's pace.
func TestLookupNoAffinityTakeover(t *testing.T) {
	s := liveFleetSnapshot()
	s.Nodes[0].ProvisionState, s.Nodes[0].Reservation = strp("active"), nil
	_, body := get(t, newHandler(t, fixture.NewSource(s)), "/?node=deploy-1")
	want := "No conductor has prepared this node's boot environment yet (conductor_affinity is empty); Ironic takes over an active node with no affinity as any other: c2:8090 takes it over (1 node(s) pending there; Ironic takes over at most 8 per conductor every 3m0s: within about 3m0s)."
	if !strings.Contains(html.UnescapeString(body), want) {
		t.Errorf("lookup lacks %q", want)
	}
}

// TestConductorPageStateMeaning: a conductor's page says what its state
// means on the release that wrote the database, a dead one never only
// "crashed".
func TestConductorPageStateMeaning(t *testing.T) {
	_, body := get(t, newHandler(t, fixture.NewSource(liveFleetSnapshot())), "/?conductor=c3:8090")
	want := `<span id="c-meaning">online with a stale heartbeat: crashed, hung, or stopped without unregistering (SIGUSR1): the database cannot tell which</span>`
	if !strings.Contains(body, want) {
		t.Errorf("conductor page lacks %s", want)
	}
}
