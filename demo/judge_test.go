package demo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// fakeClock is the clock of a driven demo: the simulator's heartbeats and
// the exporter's judgement both read it, so a test says when time passes.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// driven is a demo at speed 1 whose simulator a test drives step by step on
// a fake clock (no loop runs; each step is followed by a judgement, as run
// does after every event and when due after a heartbeat), beside the
// exporter as production builds it: a topology.Cache over
// MultiConductor(db.Open(DSN)) with Demo.Settings.
type driven struct {
	t        *testing.T
	d        *Demo
	sim      *simulator
	clock    *fakeClock
	exporter *topology.Cache
	start    time.Time
	// newLocks are the locks the last tick took: node id -> holder.
	newLocks map[int64]string
}

// drive creates a driven demo. The tests using it need no timing, and many
// snapshots: they are not parallel, so that they run before, not beside,
// the tests that watch a demo in real time (TestSimulator, TestDemoCommand).
func drive(t *testing.T, settings topology.Settings) *driven {
	t.Helper()
	// On a whole microsecond: the database keeps heartbeats to the
	// microsecond (sqlaTime), and a finer clock would make what the
	// exporter reads older than what the simulator wrote by a few hundred
	// nanoseconds, which decides a heartbeat exactly heartbeat_timeout old
	// (stale for one, fresh for the other) at random.
	clock := &fakeClock{t: time.Now().UTC().Truncate(time.Microsecond)}
	d, sim, err := create(Options{Logger: newLogger(t), Settings: settings}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	exporter, err := topology.NewCache(topology.CacheConfig{Source: MultiConductor(open(t, d)),
		Settings: d.Settings(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &driven{t: t, d: d, sim: sim, clock: clock, exporter: exporter, start: clock.Now()}
}

func (x *driven) ctx() (context.Context, context.CancelFunc) {
	// A deadline: the cache waits for its read.
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// judge is the simulator's judgement after a step.
func (x *driven) judge(ctx context.Context) {
	x.t.Helper()
	if err := x.sim.judge(ctx); err != nil {
		x.t.Fatal(err)
	}
}

// tick lets one heartbeat interval pass and runs the simulator's tick.
func (x *driven) tick() {
	x.t.Helper()
	x.clock.Add(HeartbeatInterval)
	x.tickNow()
}

// tickNow runs the simulator's tick at the clock's time and judges.
func (x *driven) tickNow() {
	x.t.Helper()
	before := map[int64]string{}
	for id, n := range x.sim.nodes {
		before[id] = n.reservation
	}
	ctx, cancel := x.ctx()
	defer cancel()
	if err := x.sim.tick(ctx); err != nil {
		x.t.Fatal(err)
	}
	x.judge(ctx)
	x.newLocks = map[int64]string{}
	for id, n := range x.sim.nodes {
		if n.reservation != "" && before[id] != n.reservation {
			x.newLocks[id] = n.reservation
		}
	}
}

// until ticks until at into the cycle.
func (x *driven) until(at time.Duration) {
	x.t.Helper()
	for x.clock.Now().Before(x.start.Add(at)) {
		x.tick()
	}
}

// event runs one scripted event of cycle 0 at its time.
func (x *driven) event(at time.Duration, do func(context.Context, int) error) {
	x.t.Helper()
	x.until(at)
	ctx, cancel := x.ctx()
	defer cancel()
	if err := do(ctx, 0); err != nil {
		x.t.Fatal(err)
	}
	x.judge(ctx)
}

// exporterView is the topology the exporter serves now.
func (x *driven) exporterView() *topology.Topology {
	x.t.Helper()
	ctx, cancel := x.ctx()
	defer cancel()
	v := x.exporter.Get(ctx) // MinInterval 0: a read at every Get
	if v.Err != nil {
		x.t.Fatalf("the exporter's refresh: %v", v.Err)
	}
	return v.Topology
}

// agree compares the simulator's view, judged after the last step, with the
// exporter's at the same instant and fails when they disagree on the
// conductor of any node, on the nodes without a conductor, or on a
// conductor's liveness or ring membership; and when a lock of the last tick
// is on a node the exporter maps to another conductor. It returns the
// exporter's view.
func (x *driven) agree(point string) *topology.Topology {
	x.t.Helper()
	exp := x.exporterView()
	if !x.sim.view.Now.Equal(exp.Now) {
		x.t.Fatalf("%s: the simulator judged at %s, the exporter at %s", point, x.sim.view.Now, exp.Now)
	}
	if len(exp.Nodes) != len(x.sim.nodes) {
		x.t.Errorf("%s: the exporter reads %d nodes, the simulator has %d", point, len(exp.Nodes), len(x.sim.nodes))
	}
	var disagree []string
	for _, n := range x.sim.nodes {
		e, ok := exp.Node(n.uuid)
		if !ok {
			disagree = append(disagree, n.uuid+": not in the exporter's view")
			continue
		}
		if got := x.sim.servedBy(n); got != e.Conductor {
			disagree = append(disagree, fmt.Sprintf("%s (%s:%s): simulator %q, exporter %q", n.uuid, n.group, n.driver, got, e.Conductor))
		}
	}
	if len(disagree) > 0 {
		x.t.Errorf("%s: the simulator and the exporter disagree on %d nodes, e.g. %v", point, len(disagree), disagree[:min(3, len(disagree))])
	}
	if s, e := orphans(x.sim.view), orphans(exp); s != e {
		x.t.Errorf("%s: nodes without conductor: simulator %d, exporter %d", point, s, e)
	}
	for _, c := range exp.Conductors {
		sc, ok := x.sim.view.Conductor(c.Hostname)
		if !ok || sc.Alive != c.Alive || sc.Active != c.Active || sc.State != c.State {
			x.t.Errorf("%s: conductor %s: simulator %+v, exporter alive=%v member=%v state=%s", point, c.Hostname, sc, c.Alive, c.Active, c.State)
		}
	}
	for id, holder := range x.newLocks {
		if e, ok := exp.Node(x.sim.nodes[id].uuid); !ok || e.Conductor != holder {
			x.t.Errorf("%s: %s locked node %d that the exporter maps to %q", point, holder, id, e.Conductor)
		}
	}
	return exp
}

func conductorOf(t *testing.T, topo *topology.Topology, host string) *topology.ConductorInfo {
	t.Helper()
	c, ok := topo.Conductor(host)
	if !ok {
		t.Fatalf("no conductor %s", host)
	}
	return c
}

// TestSimulatorAgreesWithExporter drives one scripted cycle and, at every
// event and once the crashed conductor's heartbeat is stale, fails if the
// simulator and the exporter disagree on which conductor serves any node.
// The rules decide liveness: the crashed conductor, online all along, leaves
// the rings heartbeat_timeout after its last heartbeat, in both views; a
// simulator that put every online conductor in its rings would still map
// its nodes to it.
func TestSimulatorAgreesWithExporter(t *testing.T) {
	x := drive(t, topology.Settings{})
	drained, crashed := x.sim.victim(drainVictims, 0).host, x.sim.victim(crashVictims, 0).host
	x.agree("setup")
	x.until(atDrain)
	x.agree("before the drain")

	x.event(atDrain, x.sim.drain)
	exp := x.agree("drain")
	if c := conductorOf(t, exp, drained); c.Active || len(c.Nodes) != 0 || c.State != rules.StateDraining {
		t.Errorf("drain: %s member=%v nodes=%d state=%s, want out of the rings, draining", drained, c.Active, len(c.Nodes), c.State)
	}
	x.tick()
	x.agree("a tick after the drain")

	x.event(atCrash, x.sim.crash)
	exp = x.agree("crash")
	if c := conductorOf(t, exp, crashed); !c.Active || len(c.Nodes) == 0 || exp.Reservations[crashed] < locksAtCrash {
		t.Errorf("crash: %s member=%v nodes=%d locks=%d, want still in the rings with its locks",
			crashed, c.Active, len(c.Nodes), exp.Reservations[crashed])
	}

	// The crashed conductor's last heartbeat is older than the timeout
	// one tick after crash + timeout.
	x.until(atCrash + x.d.Settings().HeartbeatTimeout + HeartbeatInterval)
	exp = x.agree("crash + heartbeat_timeout")
	if c := conductorOf(t, exp, crashed); c.Active || c.Alive || len(c.Nodes) != 0 || c.State != rules.StateDead {
		t.Errorf("after the timeout: %s member=%v alive=%v nodes=%d state=%s, want dead, out of the rings",
			crashed, c.Active, c.Alive, len(c.Nodes), c.State)
	}
	x.tick()
	x.agree("a tick after the timeout")

	x.event(atEnroll, x.sim.enroll)
	exp = x.agree("enrol")
	if c := conductorOf(t, exp, drained); c.State != rules.StateStopped || c.Alive {
		t.Errorf("enrol: %s state=%s alive=%v, want stopped, its last heartbeat 20s old", drained, c.State, c.Alive)
	}
	// The takeovers since the crash moved the boot files of active
	// nodes to the conductor the exporter maps them to, at most
	// periodic_max_workers per conductor per sync_local_state_interval:
	// some are left while the crashed conductor served many.
	var elsewhere int
	for _, n := range exp.Nodes {
		if n.ProvisionState == nil || *n.ProvisionState != "active" || n.Reservation != nil || n.Conductor == "" {
			continue
		}
		if c := conductorOf(t, exp, n.Conductor); c.State == rules.StateAlive && n.AffinityHost() != n.Conductor {
			elsewhere++
		}
	}
	if elsewhere == 0 {
		t.Errorf("enrol: every active node taken over %s after the crash: the takeover is not paced", atEnroll-atCrash)
	}
	x.tick()
	x.agree("a tick after the enrolment")

	x.event(atCrashBack, x.sim.crashBack)
	exp = x.agree("crash-back")
	if c := conductorOf(t, exp, crashed); !c.Active || !c.Alive || len(c.Nodes) == 0 || exp.Reservations[crashed] != 0 {
		t.Errorf("crash-back: %s member=%v alive=%v nodes=%d locks=%d, want back in the rings, locks released",
			crashed, c.Active, c.Alive, len(c.Nodes), exp.Reservations[crashed])
	}
	x.tick()
	x.agree("a tick after the crash-back")

	x.event(atDrainRestart, x.sim.drainRestart)
	exp = x.agree("drain restart")
	if c := conductorOf(t, exp, drained); !c.Active || len(c.Nodes) == 0 {
		t.Errorf("restart: %s member=%v nodes=%d, want back in the rings", drained, c.Active, len(c.Nodes))
	}
	x.tick()
	x.agree("a tick after the restart")
}

// mapping is each node's conductor in topo, by UUID.
func mapping(topo *topology.Topology) map[string]string {
	m := make(map[string]string, len(topo.Nodes))
	for _, n := range topo.Nodes {
		m[n.UUID] = n.Conductor
	}
	return m
}

// TestSimulatorFollowsSettings: change the exporter's view through the
// settings (the ring hash, Ironic's SQLite rules) and the simulator follows:
// its conductors serve and lock what the exporter says, not what a ring of
// its own with Ironic's defaults would say.
func TestSimulatorFollowsSettings(t *testing.T) {
	defaults := Options{Speed: 1}.settings()

	t.Run("ring", func(t *testing.T) {
		x := drive(t, topology.Settings{Settings: rules.Settings{Algorithm: ring.SHA256, PartitionExponent: 3}})
		if s := x.d.Settings(); s.Algorithm != ring.SHA256 || s.PartitionExponent != 3 || s.HeartbeatTimeout != defaults.HeartbeatTimeout {
			t.Fatalf("settings %+v", s)
		}
		x.tick()
		exp := x.agree("sha256, exponent 3")
		// The same snapshot under the default settings maps many nodes
		// elsewhere: a simulator hashing with md5 and exponent 5 would
		// disagree with the exporter on them.
		ctx, cancel := x.ctx()
		defer cancel()
		snap, err := MultiConductor(open(t, x.d)).SnapshotChanges(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		def, err := topology.Build(snap, defaults, exp.Now, nil)
		if err != nil {
			t.Fatal(err)
		}
		moved, got := 0, mapping(exp)
		for uuid, c := range mapping(def) {
			if got[uuid] != c {
				moved++
			}
		}
		if moved < len(exp.Nodes)/4 {
			t.Errorf("%d of %d nodes map elsewhere under md5 and exponent 5: the settings hardly matter", moved, len(exp.Nodes))
		}
		// Its conductors lock the nodes the exporter maps to them.
		for range 3 {
			x.tick()
		}
		if len(x.newLocks) == 0 {
			t.Fatal("no lock taken in a tick")
		}
		x.agree("locks under sha256")
	})

	t.Run("sqlite rules", func(t *testing.T) {
		// Ironic's SQLite rules (22.1+): ring membership follows online
		// alone, so a crashed conductor keeps its nodes.
		x := drive(t, topology.Settings{Settings: rules.Settings{Connection: "sqlite:////var/lib/ironic/ironic.sqlite"}})
		crashed := x.sim.victim(crashVictims, 0).host
		x.event(atCrash, x.sim.crash)
		x.until(atCrash + x.d.Settings().HeartbeatTimeout + 2*HeartbeatInterval)
		exp := x.agree("sqlite rules, crash + heartbeat_timeout")
		if c := conductorOf(t, exp, crashed); !c.Active || c.Alive || len(c.Nodes) == 0 {
			t.Errorf("%s member=%v alive=%v nodes=%d, want not alive but still serving nodes", crashed, c.Active, c.Alive, len(c.Nodes))
		}
		// Nobody else locks them.
		for range 3 {
			x.tick()
			x.agree("sqlite rules, a tick later")
		}
		if got := x.sim.view.Reservations[crashed]; got < locksAtCrash {
			t.Errorf("%s holds %d locks, want its stuck ones", crashed, got)
		}
	})
}

// TestSettingsOnePlace: Demo.Settings are Options.Settings with the demo's
// defaults, and the simulator judges by them.
func TestSettingsOnePlace(t *testing.T) {
	s := Options{Speed: 5}.settings()
	if s.HeartbeatTimeout != HeartbeatTimeout/5 || s.PartitionExponent != 5 || s.Algorithm != ring.MD5 || s.Release != Release {
		t.Errorf("defaults at speed 5: %+v", s)
	}
	if s.GracefulShutdownTimeout != GracefulShutdownTimeout/5 || s.SyncLocalStateInterval != SyncLocalStateInterval/5 || s.PeriodicMaxWorkers != 8 {
		t.Errorf("stop and takeover defaults at speed 5: %+v", s)
	}
	given := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 7, Algorithm: ring.SHA1,
		GracefulShutdownTimeout: time.Second, PeriodicMaxWorkers: 2, SyncLocalStateInterval: time.Hour}, Release: Release}
	if s := (Options{Speed: 5, Settings: given}).settings(); s != given {
		t.Errorf("given %+v, got %+v", given, s)
	}
	x := drive(t, given)
	if x.d.Settings() != given || x.sim.view.Settings != given || x.d.Settings().HeartbeatTimeout != time.Minute {
		t.Errorf("demo %+v, simulator's view %+v, want %+v", x.d.Settings(), x.sim.view.Settings, given)
	}
	if x.sim.view.Backend != rules.MySQL {
		t.Errorf("the simulator judges the fleet as on %s, want mysql (MultiConductor)", x.sim.view.Backend)
	}
}

// TestReleaseDetected: the database the demo writes for a release is one
// that release writes: the exporter, not told the release, detects it from
// the schema's alembic_version and the conductors' object version.
func TestReleaseDetected(t *testing.T) {
	for _, rel := range []string{"21.4", "29.0", rules.Newest.String()} {
		x := drive(t, topology.Settings{Release: rules.MustRelease(rel)})
		ctx, cancel := x.ctx()
		snap, err := MultiConductor(open(t, x.d)).SnapshotChanges(ctx, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		_, det, err := topology.Rules(snap, topology.Settings{})
		if err != nil || det.Release != rules.MustRelease(rel) || det.From != "alembic_version+conductors.version" {
			t.Errorf("demo of %s: detected %s from %s (%v), warnings %v", rel, det.Release, det.From, err, det.Warnings)
		}
	}
}

// TestTakeoverPaced: after a crash, the conductors that now serve the dead
// one's active nodes take them over (_sync_local_state) at most
// periodic_max_workers each per sync_local_state_interval, as the live
// fleet saw (5 > 1 > 0 with 4 per 10s), until none is left.
func TestTakeoverPaced(t *testing.T) {
	s := liveSettings(rules.MustRelease("21.4"))
	x := drive(t, s)
	c := x.sim.victim(crashVictims, 0)
	x.tick()
	x.sim.kill(c)
	prepared := func() map[int64]int64 {
		m := map[int64]int64{}
		for id, n := range x.sim.nodes {
			if n.state == "active" {
				m[id] = n.affinity
			}
		}
		return m
	}
	left := func(m map[int64]int64) int {
		k := 0
		for _, a := range m {
			if a == c.id {
				k++
			}
		}
		return k
	}
	start := prepared()
	if left(start) <= s.PeriodicMaxWorkers {
		t.Fatalf("%s prepared %d active nodes: too few to see the pace", c.host, left(start))
	}
	var counts []int
	roundStart, moved := x.clock.Now(), map[int64]int{}
	before := start
	for range 200 {
		x.tick()
		now := prepared()
		if x.clock.Now().Sub(roundStart) >= s.SyncLocalStateInterval {
			roundStart, moved = x.clock.Now(), map[int64]int{}
		}
		for id, a := range now {
			if before[id] == c.id && a != c.id {
				moved[a]++
				if moved[a] > s.PeriodicMaxWorkers {
					t.Fatalf("conductor %d took over %d nodes within %s, want at most %d", a, moved[a], s.SyncLocalStateInterval, s.PeriodicMaxWorkers)
				}
			}
		}
		before = now
		if n := left(now); len(counts) == 0 || counts[len(counts)-1] != n {
			counts = append(counts, n)
		}
		if left(now) == 0 {
			break
		}
	}
	if counts[len(counts)-1] != 0 || len(counts) < 3 {
		t.Errorf("boot files left on %s as they changed: %v, want all taken over in several rounds", c.host, counts)
	}
	t.Logf("boot files left on %s: %v", c.host, counts)
}
