package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// reuseFleet has a conductor in each state, one outside every ring (c5: no
// hardware types) that prepared nodes and holds locks, an empty hostname
// that is a ring member, orphans of every kind, and nodes in every
// lifecycle case (affinity up, not alive and missing, stuck or not, locks of
// running, stopped and unknown hosts, maintenance, a duplicated row).
func reuseFleet(backend rules.Backend, nodes int) *db.Snapshot {
	snap := &db.Snapshot{Backend: backend, Conductors: []db.Conductor{
		cond(1, "c1", "", true, ago(10*time.Second), "ipmi", "redfish"),
		cond(2, "c2", "", true, ago(20*time.Second), "ipmi"),
		cond(3, "c3", "rack1", true, ago(5*time.Second), "ipmi"),
		cond(4, "c4", "rack1", true, ago(50*time.Second), "ipmi"),
		cond(5, "c5", "", true, ago(10*time.Second)),
		cond(6, "c6", "rack1", false, ago(2*time.Hour), "ipmi"),
		cond(7, "", "edge", true, ago(10*time.Second), "ipmi"),
		cond(8, "c8", "", false, ago(10*time.Second), "ipmi"),
	}}
	rng := rand.New(rand.NewPCG(7, 11))
	groups := []string{"", "", "rack1", "edge", "rack2"}
	drivers := []string{"ipmi", "ipmi", "redfish", "idrac"}
	states := []string{"", "active", "active", "available", "deploying", "wait call-back", "clean wait",
		"rescue", "manageable", "some future state"}
	holders := []string{"", "", "c1", "c3", "c4", "c5", "c6", "c8", "gone"}
	for i := range nodes {
		n := node(int64(i+1), benchUUID(rng), groups[rng.IntN(len(groups))], drivers[rng.IntN(len(drivers))])
		if s := states[rng.IntN(len(states))]; s != "" {
			n.ProvisionState = ptr(s)
		}
		if a := rng.IntN(11); a < 10 {
			fixture.SetAffinity(n, int32(a)) // 0: NULL; 9: no such conductor
		}
		if h := holders[rng.IntN(len(holders))]; h != "" {
			n.Reservation = ptr(h)
		}
		if rng.IntN(2) == 0 {
			n.Name = ptr(fmt.Sprintf("node-%d", i))
		}
		n.Maintenance = rng.IntN(5) == 0
		snap.Nodes = append(snap.Nodes, n)
		if i == nodes/2 {
			snap.Nodes = append(snap.Nodes, n) // a row a join repeated
		}
	}
	return snap
}

// withConductors is snap with its own copy of the conductors (and their
// hardware types) and the very same node slice.
func withConductors(snap *db.Snapshot) *db.Snapshot {
	next := *snap
	next.Conductors = slices.Clone(snap.Conductors)
	for i := range next.Conductors {
		next.Conductors[i].HardwareTypes = slices.Clone(next.Conductors[i].HardwareTypes)
	}
	return &next
}

// copiedNodes is snap with a copy of its nodes: the same rows, which
// Build cannot know are unchanged, so it takes the full path.
func copiedNodes(snap *db.Snapshot) *db.Snapshot {
	next := *snap
	next.Nodes = copyNodes(snap.Nodes)
	return &next
}

// copyNodes is a copy of nodes and of each node, which a test may write.
func copyNodes(nodes []*db.Node) []*db.Node {
	out := make([]*db.Node, len(nodes))
	for i, n := range nodes {
		c := *n
		out[i] = &c
	}
	return out
}

// sharesNodes reports whether b's nodes are a's (Build's reuse path).
func sharesNodes(a, b *Topology) bool {
	return len(a.Nodes) > 0 && len(b.Nodes) == len(a.Nodes) && &a.Nodes[0] == &b.Nodes[0]
}

// diffTopologies lists the fields of Topology in which a and b, both
// built over prev, differ: every field, exported or not, compared with
// reflect.DeepEqual (the node lookups are built first on both, so that
// their lazily built state compares too), but NodeGeneration and the
// digest cache, which must be prev's in both or new in both (a new
// generation is unique in the process); and then every lookup by UUID and
// name.
func diffTopologies(a, b, prev *Topology) []string {
	a.index()
	b.index()
	var diffs []string
	if ca, cb := a.NodeGeneration == prev.NodeGeneration, b.NodeGeneration == prev.NodeGeneration; ca != cb {
		diffs = append(diffs, fmt.Sprintf("NodeGeneration carried over %v, want %v", ca, cb))
	}
	// Every field, exported or not, of the Topology and of its embedded
	// NodeResults.
	var fields func(va, vb reflect.Value, prefix string)
	fields = func(va, vb reflect.Value, prefix string) {
		for i := range va.NumField() {
			f := va.Type().Field(i)
			switch f.Name {
			case "NodeGeneration":
				continue
			case "NodeResults":
				fields(va.Field(i), vb.Field(i), "NodeResults.")
				continue
			case "hostCache": // holds a func, which DeepEqual never finds equal
				if (a.hostCache == prev.hostCache) != (b.hostCache == prev.hostCache) {
					diffs = append(diffs, "hostCache: one carried over, the other not")
				}
				continue
			}
			x := reflect.NewAt(f.Type, unsafe.Pointer(va.Field(i).UnsafeAddr())).Elem().Interface()
			y := reflect.NewAt(f.Type, unsafe.Pointer(vb.Field(i).UnsafeAddr())).Elem().Interface()
			if !reflect.DeepEqual(x, y) {
				diffs = append(diffs, fmt.Sprintf("%s%s: %s", prefix, f.Name, firstDifference(x, y)))
			}
		}
	}
	fields(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "")
	for i := range a.Nodes {
		n := a.Nodes[i].Node
		for _, ident := range []string{n.UUID, a.Nodes[i].NameOrEmpty()} {
			x, okx := a.Node(ident)
			y, oky := b.Node(ident)
			if okx != oky || (okx && x.ID != y.ID) {
				diffs = append(diffs, fmt.Sprintf("Node(%q) differs", ident))
			}
		}
	}
	return diffs
}

// firstDifference describes where two values of a field differ, down to
// the first differing element of a slice.
func firstDifference(x, y any) string {
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	if vx.Kind() == reflect.Slice && vx.Len() == vy.Len() {
		for i := range vx.Len() {
			if ex, ey := vx.Index(i).Interface(), vy.Index(i).Interface(); !reflect.DeepEqual(ex, ey) {
				return fmt.Sprintf("[%d] %+v, want %+v", i, ex, ey)
			}
		}
	}
	s := fmt.Sprintf("%+v, want %+v", x, y)
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}

// sameMapping checks what a from-scratch Build (no previous topology)
// computes against t: every node's and conductor's node-derived result.
func sameMapping(t *testing.T, name string, got, scratch *Topology) {
	t.Helper()
	if !reflect.DeepEqual(got.Nodes, scratch.Nodes) || !reflect.DeepEqual(got.Conductors, scratch.Conductors) ||
		!reflect.DeepEqual(got.Orphans, scratch.Orphans) || !reflect.DeepEqual(got.Reservations, scratch.Reservations) ||
		!reflect.DeepEqual(got.AffinityUnavailable, scratch.AffinityUnavailable) || !reflect.DeepEqual(got.Stuck, scratch.Stuck) {
		t.Errorf("%s: the topology differs from a Build from scratch", name)
	}
	for i := range scratch.Rings {
		if g, s := got.Rings[i], scratch.Rings[i]; g.Key() != s.Key() || g.Nodes != s.Nodes ||
			!slices.Equal(g.Ring.Hosts(), s.Ring.Hosts()) {
			t.Errorf("%s: ring %s differs from a Build from scratch", name, s.Key())
		}
	}
}

// reuseInputs are what one Build is given.
type reuseInputs struct {
	snap *db.Snapshot
	s    Settings
	now  time.Time
}

// rebuild builds in over prev, and the same with a copy of the node slice
// (Build's full path), checks that both are the same topology, and that
// the first took the reuse path exactly when wantFast. It returns the first.
func rebuild(t *testing.T, name string, in reuseInputs, prev *Topology, wantFast bool) *Topology {
	t.Helper()
	got, err := Build(in.snap, in.s, in.now, prev)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	full, err := Build(copiedNodes(in.snap), in.s, in.now, prev)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if sharesNodes(prev, full) {
		t.Fatalf("%s: a copied node slice took the reuse path", name)
	}
	if fast := sharesNodes(prev, got); fast != wantFast {
		t.Errorf("%s: reuse path taken %v, want %v", name, fast, wantFast)
	}
	for _, d := range diffTopologies(got, full, prev) {
		t.Errorf("%s: %s", name, d)
	}
	scratch, err := Build(copiedNodes(in.snap), in.s, in.now, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sameMapping(t, name, got, scratch)
	return got
}

// conductorByHost is the conductor row of host in snap.
func conductorByHost(t *testing.T, snap *db.Snapshot, host string) *db.Conductor {
	t.Helper()
	for i := range snap.Conductors {
		if snap.Conductors[i].Hostname == host {
			return &snap.Conductors[i]
		}
	}
	t.Fatalf("no conductor %q", host)
	return nil
}

// TestRebuildOverUnchangedNodes: a rebuild over the very node slice of the
// previous topology reuses its node-derived results when, and only when,
// the conductors are judged alike in what those results depend on; either
// way the topology is the one Build's full path computes (compared field
// by field), and the refresh after any transition takes the reuse path.
func TestRebuildOverUnchangedNodes(t *testing.T) {
	ungrouped := testSettings
	ungrouped.Release = rules.MustRelease("16.0")
	ungrouped.PinReleaseVersion = "11.0" // one ring per hardware type (Rules.UngroupedRings)
	type step struct {
		name   string
		change func(t *testing.T, in *reuseInputs)
		fast   bool
	}
	heartbeat := func(host string, age time.Duration) func(*testing.T, *reuseInputs) {
		return func(t *testing.T, in *reuseInputs) { conductorByHost(t, in.snap, host).UpdatedAt = in.now.Add(-age) }
	}
	online := func(host string, on bool) func(*testing.T, *reuseInputs) {
		return func(t *testing.T, in *reuseInputs) { conductorByHost(t, in.snap, host).Online = on }
	}
	for _, tc := range []struct {
		name    string
		backend rules.Backend
		s       Settings
		fleet   func() *db.Snapshot // reuseFleet when nil
		steps   []step
	}{
		{name: "nothing changes", steps: []step{{"same inputs", func(*testing.T, *reuseInputs) {}, true}}},
		{name: "heartbeats advance within the timeout", steps: []step{
			{"every heartbeat a second old", func(_ *testing.T, in *reuseInputs) {
				for i := range in.snap.Conductors {
					if in.snap.Conductors[i].Online {
						in.snap.Conductors[i].UpdatedAt = in.now.Add(-time.Second)
					}
				}
			}, true},
			{"5 seconds later", func(_ *testing.T, in *reuseInputs) { in.now = in.now.Add(5 * time.Second) }, true}}},
		{name: "a heartbeat ages past the timeout", steps: []step{
			{"c4 dead 15s later", func(_ *testing.T, in *reuseInputs) { in.now = in.now.Add(15 * time.Second) }, false}}},
		{name: "ring member goes offline and online", steps: []step{
			{"c1 draining", online("c1", false), false},
			{"c1 back", online("c1", true), false}}},
		{name: "draining conductor comes online", steps: []step{{"c8 online", online("c8", true), false}}},
		{name: "stopped conductor starts", steps: []step{
			{"c6 alive", func(t *testing.T, in *reuseInputs) { online("c6", true)(t, in); heartbeat("c6", time.Second)(t, in) }, false}}},
		{name: "conductor outside the rings drains", steps: []step{
			// State goes alive -> draining, Running() stays: node results reusable.
			{"c5 offline, heartbeating", online("c5", false), true}}},
		{name: "conductor outside the rings, holding boot files and locks, dies", steps: []step{
			{"c5 stale", heartbeat("c5", time.Hour), false}}},
		{name: "conductor outside the rings renamed", steps: []step{
			{"c5 is c5b", func(t *testing.T, in *reuseInputs) { conductorByHost(t, in.snap, "c5").Hostname = "c5b" }, false}}},
		{name: "conductor outside the rings re-registered under another id", steps: []step{
			{"c5 id 9", func(t *testing.T, in *reuseInputs) {
				in.snap.Conductors = slices.DeleteFunc(in.snap.Conductors, func(c db.Conductor) bool { return c.Hostname == "c5" })
				in.snap.Conductors = append(in.snap.Conductors, cond(9, "c5", "", true, in.now))
			}, false}}},
		{name: "conductor row replaced under another id, in the same place", steps: []step{
			{"c8 id 12", func(t *testing.T, in *reuseInputs) { conductorByHost(t, in.snap, "c8").ID = 12 }, false}}},
		{name: "conductor added", steps: []step{
			{"c9 without hardware types", func(_ *testing.T, in *reuseInputs) {
				in.snap.Conductors = append(in.snap.Conductors, cond(10, "c9", "", true, in.now))
			}, false},
			{"c10 in rack1", func(_ *testing.T, in *reuseInputs) {
				in.snap.Conductors = append(in.snap.Conductors, cond(11, "c10", "rack1", true, in.now, "ipmi", "idrac"))
			}, false}}},
		{name: "conductor removed", steps: []step{
			{"c2 unregistered", func(_ *testing.T, in *reuseInputs) {
				in.snap.Conductors = slices.DeleteFunc(in.snap.Conductors, func(c db.Conductor) bool { return c.Hostname == "c2" })
			}, false},
			{"c5 unregistered", func(_ *testing.T, in *reuseInputs) {
				in.snap.Conductors = slices.DeleteFunc(in.snap.Conductors, func(c db.Conductor) bool { return c.Hostname == "c5" })
			}, false}}},
		{name: "hardware type added", steps: []step{
			{"c2 registers redfish", func(t *testing.T, in *reuseInputs) {
				c := conductorByHost(t, in.snap, "c2")
				c.HardwareTypes = append(c.HardwareTypes, "redfish")
			}, false},
			{"c3 registers idrac, which serves orphans", func(t *testing.T, in *reuseInputs) {
				c := conductorByHost(t, in.snap, "c3")
				c.HardwareTypes = append(c.HardwareTypes, "idrac")
			}, false}}},
		{name: "hardware type listed twice", steps: []step{
			{"c2 lists ipmi again", func(t *testing.T, in *reuseInputs) {
				c := conductorByHost(t, in.snap, "c2")
				c.HardwareTypes = append(c.HardwareTypes, "ipmi")
			}, true}}},
		{name: "reservation holder in a ring dies", steps: []step{
			{"c3 stale", heartbeat("c3", time.Hour), false}}},
		{name: "empty hostname leaves the rings", steps: []step{{"'' offline", online("", false), false}}},
		{name: "columns the topology does not derive from change", steps: []step{
			{"versions and registration times", func(_ *testing.T, in *reuseInputs) {
				for i := range in.snap.Conductors {
					in.snap.Conductors[i].Version = "1.4"
					in.snap.Conductors[i].CreatedAt = in.now
				}
			}, true}}},
		{name: "nodes changed", steps: []step{
			{"a new node slice, one driver changed", func(_ *testing.T, in *reuseInputs) {
				in.snap.Nodes = copyNodes(in.snap.Nodes)
				in.snap.Nodes[3].Driver = "redfish"
			}, false},
			{"a shorter slice of the same array", func(_ *testing.T, in *reuseInputs) {
				in.snap.Nodes = in.snap.Nodes[:len(in.snap.Nodes)-1]
			}, false}}},
		{name: "settings change", steps: []step{
			{"heartbeat_timeout 2m", func(_ *testing.T, in *reuseInputs) { in.s.HeartbeatTimeout = 2 * time.Minute }, false},
			{"release 29.0", func(_ *testing.T, in *reuseInputs) { in.s.Release = rules.MustRelease("29.0") }, false}}},
		{name: "SQLite: heartbeats age past the timeout", backend: rules.SQLite, steps: []step{
			{"an hour later", func(_ *testing.T, in *reuseInputs) { in.now = in.now.Add(time.Hour) }, true},
			{"c5 unregisters gracefully", online("c5", false), false}}},
		{name: "ungrouped rings: nodes moved, then nothing changes", s: ungrouped, steps: []step{
			{"c1 dies", heartbeat("c1", time.Hour), false},
			{"same inputs", func(*testing.T, *reuseInputs) {}, true}}},
		// Remapped of the nodes that moved in prev has group h, which
		// Remapped leaves out while nothing moves (no ring, no orphan in h).
		{name: "ungrouped rings, served groups only: nodes moved, then nothing changes", s: ungrouped, fleet: func() *db.Snapshot {
			snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
				cond(1, "c1", "g", true, ago(time.Second), "ipmi"),
				cond(2, "c2", "g", true, ago(time.Second), "ipmi")}}
			for i := range 100 {
				snap.Nodes = append(snap.Nodes, node(int64(i+1), fmt.Sprintf("%036d", i), "h", "ipmi"))
			}
			return snap
		}, steps: []step{
			{"c1 dies", heartbeat("c1", time.Hour), false},
			{"same inputs", func(*testing.T, *reuseInputs) {}, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend, s := tc.backend, tc.s
			if backend == 0 {
				backend = rules.PostgreSQL
			}
			if s == (Settings{}) {
				s = testSettings
			}
			in := reuseInputs{s: s, now: testNow}
			if tc.fleet != nil {
				in.snap = tc.fleet()
			} else {
				in.snap = reuseFleet(backend, 400)
			}
			prev := mustBuild(t, in.snap, in.s, nil)
			if tc.fleet == nil && (len(prev.Orphans) == 0 || len(prev.Stuck) == 0 || len(prev.AffinityUnavailable) == 0 || len(prev.Warnings) == 0) {
				t.Fatalf("the fleet lacks a case: orphans %v, stuck %v, affinity %v, warnings %v",
					prev.Orphans, prev.Stuck, prev.AffinityUnavailable, prev.Warnings)
			}
			for _, st := range tc.steps {
				in.snap = withConductors(in.snap)
				st.change(t, &in)
				prev = rebuild(t, st.name, in, prev, st.fast)
			}
			in.snap = withConductors(in.snap)
			rebuild(t, "the refresh after", in, prev, true)
		})
	}
}

// TestRebuildOverUnchangedNodesRandomly: random walks of conductor
// changes over one node slice, each rebuild compared with Build's full
// path; both paths must be taken.
func TestRebuildOverUnchangedNodesRandomly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	fast, slow := 0, 0
	for walk := range 20 {
		in := reuseInputs{snap: reuseFleet(rules.PostgreSQL, 200), s: testSettings, now: testNow}
		prev := mustBuild(t, in.snap, in.s, nil)
		for stepNo := range 15 {
			in.snap = withConductors(in.snap)
			cs := in.snap.Conductors
			c := &cs[rng.IntN(len(cs))]
			what := ""
			switch rng.IntN(9) {
			case 0:
				what = "nothing"
			case 1:
				in.now = in.now.Add(time.Duration(rng.IntN(40)) * time.Second)
				what = "time passes"
			case 2:
				c.UpdatedAt = in.now.Add(-time.Duration(rng.IntN(120)) * time.Second)
				what = "heartbeat of " + c.Hostname
			case 3:
				c.Online = !c.Online
				what = "online of " + c.Hostname
			case 4:
				c.HardwareTypes = append(c.HardwareTypes, []string{"ipmi", "redfish", "idrac"}[rng.IntN(3)])
				what = "hardware type of " + c.Hostname
			case 5:
				c.HardwareTypes = nil
				what = "no hardware types on " + c.Hostname
			case 6:
				in.snap.Conductors = append(cs, cond(int64(100+stepNo), fmt.Sprintf("n%d", stepNo),
					[]string{"", "rack1", "edge"}[rng.IntN(3)], true, in.now, "ipmi"))
				what = "conductor added"
			case 7:
				if len(cs) > 1 {
					i := rng.IntN(len(cs))
					what = "conductor removed: " + cs[i].Hostname
					in.snap.Conductors = slices.Delete(cs, i, i+1)
				}
			case 8:
				c.Hostname += "x"
				what = "renamed " + c.Hostname
			}
			got, err := Build(in.snap, in.s, in.now, prev)
			if err != nil {
				t.Fatal(err)
			}
			full, err := Build(copiedNodes(in.snap), in.s, in.now, prev)
			if err != nil {
				t.Fatal(err)
			}
			if sharesNodes(prev, got) {
				fast++
			} else {
				slow++
			}
			for _, d := range diffTopologies(got, full, prev) {
				t.Errorf("walk %d step %d (%s): %s", walk, stepNo, what, d)
			}
			prev = got
		}
	}
	if fast == 0 || slow == 0 {
		t.Errorf("reuse path taken %d times, full path %d: both must be", fast, slow)
	}
	t.Logf("reuse path %d, full path %d", fast, slow)
}

// TestSharedNodeIndexIsSafe: topologies that share their nodes share one
// lazily built lookup; readers of both, concurrently, build it once (run
// with -race).
func TestSharedNodeIndexIsSafe(t *testing.T) {
	snap := reuseFleet(rules.PostgreSQL, 50)
	prev := mustBuild(t, snap, testSettings, nil)
	next := mustBuild(t, withConductors(snap), testSettings, prev)
	if !sharesNodes(prev, next) || prev.idx != next.idx {
		t.Fatal("the rebuild does not share the nodes and their lookup")
	}
	var wg sync.WaitGroup
	for _, topo := range []*Topology{prev, next, prev, next} {
		wg.Go(func() {
			for i := range topo.Nodes {
				if n, ok := topo.Node(topo.Nodes[i].UUID); !ok || n.UUID != topo.Nodes[i].UUID {
					t.Errorf("node %s not found", topo.Nodes[i].UUID)
				}
			}
		})
	}
	wg.Wait()
}
