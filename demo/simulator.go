package demo

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The simulator plays Ironic's conductors against the database, writing
// what the conductors of the demo's release write (Demo.Settings' Release:
// rules.Newest unless --ironic.release names another), as
// ironic/conductor/base_manager.py, manager.py and rpc_service.py of that
// release do; where the release decides, it asks package rules (each rule
// cites Ironic's function and commit):
//   - keepalive: every heartbeat interval touch_conductor sets
//     updated_at=now and online=(not shutting down);
//   - work (deploys, tear-downs, and short locks) on nodes the rings map to
//     the conductor, under its lock (reserve_node / release_node), for a
//     few heartbeats; a deploy sets conductor_affinity halfway, once the
//     deploy interface has prepared the node (do_node_deploy);
//   - a graceful stop (SIGTERM, del_host and RPCService.stop): it
//     unregisters (its conductor_hardware_interfaces rows deleted,
//     online=false) and takes no new work; up to 21.x it clears its locks
//     first and its workers go on without them (rules.StopClearsLocks),
//     from 22.0 it keeps them (6a9e319fb); on 23.1-31.x its keepalive goes
//     on writing online=false until it exits (rules.DrainHeartbeats,
//     3f9151163), elsewhere the heartbeat stops when it unregisters (32.0:
//     bbf57b1c2); it exits when its work is done or
//     graceful_shutdown_timeout has passed, leaving the nodes its workers
//     had not finished in their state (with their locks from 22.0);
//   - a crash (SIGKILL) writes nothing more: online stays true, its locks
//     stay;
//   - peers break the locks of a conductor get_offline_conductors returns
//     (rules.OfflineForOrphans: a stale heartbeat) and fail its deploys and
//     cleanings (_check_orphan_nodes, rules.OrphanFailedState), for the
//     nodes their rings map to them;
//   - a start (prepare_host + init_host): its stale locks cleared, register
//     (online=true, updated_at=now), hardware interfaces registered again,
//     then the unlocked nodes its rings map to it left in a state no
//     conductor resumes are failed (_fail_transient_state,
//     rules.FailedState);
//   - enrolment (create_node, provision state enroll), the oldest enrolled
//     nodes deleted again;
//   - boot environments: a deployed node's conductor_affinity is the
//     conductor that prepared it; the takeover (_sync_local_state) moves
//     the affinity of active nodes to the ring's conductor, at most
//     periodic_max_workers nodes per conductor every
//     sync_local_state_interval;
//   - the stale conductor cleanup (32.0+, 6135a00c3) deletes nothing: the
//     demo is judged as on MySQL, where it fails at every run
//     (rules.CleanupFails).
//
// The simulator keeps no rings of its own: its view of the fleet (node to
// conductor, liveness, ring membership) is the topology topology.Build makes
// of a snapshot read through MultiConductor with the exporter's settings
// (Demo.Settings), judged after the events and heartbeats (run), so that
// the simulator and the page agree on every node; it logs the changes the
// page shows. Its own flags say only what a simulated process does.

// Base durations, at Speed 1.
const (
	// HeartbeatTimeout is the [conductor]heartbeat_timeout the demo runs
	// with (Ironic's default is 60s), so that changes show fast; divided by
	// the speed, it is Demo.Settings' unless Options.Settings gives one.
	HeartbeatTimeout = 10 * time.Second
	// MinInterval is the --refresh.min-interval the demo runs with.
	MinInterval = time.Second
	// HeartbeatInterval is the simulated [conductor]heartbeat_interval.
	HeartbeatInterval = 2 * time.Second
	// GracefulShutdownTimeout is the [DEFAULT]graceful_shutdown_timeout
	// the demo runs with (Ironic's default is 60s): shorter than the work
	// a stopping conductor holds (workBeats), so that the stop leaves work
	// unfinished, as a stop past the timeout does.
	GracefulShutdownTimeout = 6 * time.Second
	// SyncLocalStateInterval is the [conductor]sync_local_state_interval
	// the demo runs with (Ironic's default is 180s); periodic_max_workers
	// is Ironic's default, 8.
	SyncLocalStateInterval = 10 * time.Second
	// Cycle is the length of one round of scripted events.
	Cycle = 90 * time.Second
)

// Offsets of the scripted events in each cycle, at Speed 1.
const (
	atDrain        = 5 * time.Second
	atCrash        = 15 * time.Second
	atEnroll       = 40 * time.Second
	atCrashBack    = 55 * time.Second
	atDrainRestart = 70 * time.Second
)

// Victims of each cycle, in turn.
var (
	drainVictims = []string{"cond-a2", "cond-edge2", "cond-b1", "cond-2"}
	crashVictims = []string{"cond-3", "cond-b2", "cond-a3", "cond-edge1"}
	enrollGroups = []string{"rack-a", "rack-b", "edge", ""}
)

const (
	locksAtCrash  = 3 // deploys a crashing conductor starts just before
	locksAtDrain  = 3 // deploys a stopping conductor starts just before
	workBeats     = 6 // heartbeats a deploy or tear-down holds its lock
	nodesEnrolled = 6 // nodes enrolled per cycle
	// MaxEnrolled bounds the nodes the demo enrols on top of its fleet:
	// beyond it the oldest enrolled nodes are deleted.
	MaxEnrolled = 4 * nodesEnrolled
)

type simConductor struct {
	id            int64
	host, group   string
	hardwareTypes []string
	online        bool          // what its keepalive writes to the online column
	beating       bool          // the keepalive writes heartbeats
	working       bool          // the process takes new work and takes over nodes
	lastBeat      time.Time     // updated_at as it last wrote it
	stopping      time.Time     // when its graceful stop began; zero when not stopping
	locks         map[int64]int // its workers: node id -> heartbeats left of the work
}

type simNode struct {
	id                  int64
	uuid, group, driver string
	reservation         string
	state               string // provision_state
	target              string // the provision_state its work ends in, "" to keep the state
	affinityAt          int    // a deploy sets conductor_affinity when this many heartbeats of its work are left
	maintenance         bool
	affinity            int64  // conductor_affinity, 0 for NULL
	instance            string // instance_uuid, "" for NULL
}

type simulator struct {
	db       *sql.DB
	log      *slog.Logger
	speed    int
	settings topology.Settings // the demo's, the exporter's (Demo.Settings)
	now      func() time.Time
	rng      *rand.Rand
	cond     []*simConductor
	byHost   map[string]*simConductor
	nodes    map[int64]*simNode
	// names counts the nodes named per group prefix, for new names.
	names map[string]int
	// enrolled are the ids of the nodes enrolled since start, oldest first.
	enrolled []int64
	// lastSync is when the conductors last ran _sync_local_state.
	lastSync time.Time

	// source is the database as the exporter reads it; view is the
	// topology the simulator acts on (see judge), judgeTook how long the
	// last judgement took; present is the time of the latest heartbeats.
	source    topology.Source
	view      *topology.Topology
	judgeTook time.Duration
	present   time.Time

	// nova is the simulated Nova (nova.go).
	nova simNova
}

// newSimulator is the simulator of d's database, on the clock now.
func newSimulator(d *Demo, seed uint64, now func() time.Time) *simulator {
	return &simulator{db: d.db, log: d.log, speed: d.speed, settings: d.settings, now: now,
		rng: rand.New(rand.NewPCG(seed, 0x1c0d)), source: MultiConductor(d.reader),
		byHost: map[string]*simConductor{}, nodes: map[int64]*simNode{}, names: map[string]int{}}
}

// conductorVersion is the Conductor object version the release's
// conductors write (rules.ConductorObjectVersion).
func (s *simulator) conductorVersion() string {
	return rules.ConductorObjectVersion(s.settings.Release)
}

func (s *simulator) scale(d time.Duration) time.Duration { return d / time.Duration(s.speed) }

// heartbeatTime is the clock's time, which the heartbeats being written
// are stamped with: the simulated present from then on (see judge).
func (s *simulator) heartbeatTime() time.Time {
	s.present = s.now()
	return s.present
}

// judge brings the view up to date from a snapshot and logs what changed
// (narrate); on an error the view stays the last one. Liveness is judged as
// of the latest heartbeats written, not when the snapshot could be read: a
// loop that waited behind slow readers (SQLite under the race detector)
// says nothing of the simulated conductors, which heartbeat on time.
func (s *simulator) judge(ctx context.Context) error {
	start := time.Now()
	defer func() { s.judgeTook = time.Since(start) }()
	now := s.present
	if now.IsZero() {
		now = s.now()
	}
	snap, err := s.source.SnapshotChanges(ctx, nil)
	if err != nil {
		return fmt.Errorf("judging the fleet: %w", err)
	}
	topo, err := topology.Build(snap, s.settings, now.UTC(), s.view)
	if err != nil {
		return fmt.Errorf("judging the fleet: %w", err)
	}
	s.narrate(s.view, topo)
	s.view = topo
	return nil
}

// narrate logs what the page shows changing between two views: conductors
// whose state, alive or ring membership changed, and the count of nodes no
// conductor can serve.
func (s *simulator) narrate(old, cur *topology.Topology) {
	if old == nil {
		return
	}
	for i := range cur.Conductors {
		c := &cur.Conductors[i]
		was, ok := old.Conductor(c.Hostname)
		if !ok || (was.State == c.State && was.Alive == c.Alive && was.Active == c.Active) {
			continue
		}
		s.log.Info("demo: by Ironic's rules the conductor is now "+string(c.State), "conductor", c.Hostname,
			"was", was.State, "alive", c.Alive, "hash_ring_member", c.Active, "nodes", len(c.Nodes),
			"look_at", "ironic_conductor_state, ironic_conductor_alive, ironic_conductor_hash_ring_member, ironic_conductor_nodes")
	}
	if before, after := orphans(old), orphans(cur); before != after {
		s.log.Info("demo: the nodes no conductor can serve changed", "before", before, "now", after,
			"look_at", "ironic_nodes_without_conductor")
	}
}

// orphans counts the nodes no ring of t serves.
func orphans(t *topology.Topology) int {
	n := 0
	for _, c := range t.Orphans {
		n += c
	}
	return n
}

// servedBy is the conductor the view's rings map the node to, or "" (no
// ring serves it, or the node is newer than the view).
func (s *simulator) servedBy(n *simNode) string {
	if ni, ok := s.view.Node(n.uuid); ok {
		return ni.Conductor
	}
	return ""
}

// setup writes the initial fleet, judges it, and writes the boot
// environments of the deployed nodes on the conductors that serve them.
func (s *simulator) setup(ctx context.Context) error {
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error { return s.writeFleet(ctx, tx, now) })
	if err != nil {
		return err
	}
	if err := s.judge(ctx); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.prepareBootEnvironments(ctx, tx) })
}

// writeFleet writes the conductors, their hardware interfaces and the nodes.
func (s *simulator) writeFleet(ctx context.Context, tx *sql.Tx, now time.Time) error {
	for _, spec := range fleetConductors {
		c := &simConductor{host: spec.host, group: spec.group, hardwareTypes: spec.hardwareTypes,
			online: !spec.stopped, beating: !spec.stopped, working: !spec.stopped,
			locks: map[int64]int{}}
		created := now.Add(-time.Duration(30+s.rng.IntN(300)) * 24 * time.Hour)
		started, updated := now.Add(-time.Duration(1+s.rng.IntN(72))*time.Hour), now
		if spec.stopped {
			started = now.Add(-20 * 24 * time.Hour)
			updated = now.Add(-3*24*time.Hour - 17*time.Minute)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO conductors
  (created_at, updated_at, version, hostname, drivers, online, conductor_group) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			sqlaTime(created), sqlaTime(updated), s.conductorVersion(), c.host, jsonList(c.hardwareTypes), c.online, c.group)
		if err != nil {
			return fmt.Errorf("inserting conductor %s: %w", c.host, err)
		}
		if c.id, err = res.LastInsertId(); err != nil {
			return err
		}
		if !spec.stopped {
			if err := registerInterfaces(ctx, tx, c.id, c.hardwareTypes, started); err != nil {
				return err
			}
		}
		s.cond = append(s.cond, c)
		s.byHost[c.host] = c
	}
	for _, g := range fleetGroups {
		for range g.nodes {
			if err := s.addNode(ctx, tx, g, now, false); err != nil {
				return err
			}
		}
	}
	return s.touchAll(ctx, tx)
}

// touchAll is a heartbeat of every online conductor, now: after writing
// thousands of rows, so that the heartbeats are fresh when the fleet is
// first read.
func (s *simulator) touchAll(ctx context.Context, tx *sql.Tx) error {
	now := s.heartbeatTime()
	_, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=? WHERE online=1`, sqlaTime(now))
	for _, c := range s.cond {
		if c.online {
			c.lastBeat = now
		}
	}
	return err
}

// prepareBootEnvironments sets the conductor_affinity of the nodes in
// service: the conductor that deployed each prepared its boot environment,
// the one the view maps it to. Heartbeats last.
func (s *simulator) prepareBootEnvironments(ctx context.Context, tx *sql.Tx) error {
	byConductor := map[int64][]string{}
	for _, n := range s.nodes {
		if n.state != "active" && n.state != "clean wait" && n.state != "deploy failed" {
			continue
		}
		if c := s.byHost[s.servedBy(n)]; c != nil {
			n.affinity = c.id
			byConductor[c.id] = append(byConductor[c.id], strconv.FormatInt(n.id, 10))
		}
	}
	for id, nodes := range byConductor {
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET conductor_affinity=? WHERE id IN (`+strings.Join(nodes, ",")+`)`, id); err != nil {
			return fmt.Errorf("setting conductor_affinity: %w", err)
		}
	}
	return s.touchAll(ctx, tx)
}

// setAffinity sets the node's conductor_affinity to conductor id (0: NULL).
func (s *simulator) setAffinity(ctx context.Context, tx *sql.Tx, n *simNode, id int64) error {
	var v any
	if id != 0 {
		v = id
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET conductor_affinity=? WHERE id=?`, v, n.id); err != nil {
		return fmt.Errorf("setting conductor_affinity of %s: %w", n.uuid, err)
	}
	n.affinity = id
	return nil
}

// syncLocalState is Ironic's _sync_local_state (ironic/conductor/manager.py)
// every sync_local_state_interval: each working conductor takes over the
// active, unlocked nodes the view's rings map to it whose boot environment
// another conductor prepared, and rebuilds it (_do_takeover sets
// conductor_affinity), at most periodic_max_workers of them per run
// (commit cf1b42ea3, 19.0; rules.TakeoverRounds).
func (s *simulator) syncLocalState(ctx context.Context, tx *sql.Tx, now time.Time) (int, error) {
	if !s.lastSync.IsZero() && now.Sub(s.lastSync) < s.settings.SyncLocalStateInterval {
		return 0, nil
	}
	s.lastSync = now
	limit := s.view.Rules.Settings().PeriodicMaxWorkers
	taken := map[string]int{}
	moved := 0
	for _, id := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[id]
		if n.state != "active" || n.reservation != "" {
			continue
		}
		c := s.byHost[s.servedBy(n)]
		if c == nil || !c.working || c.id == n.affinity || taken[c.host] >= limit {
			continue
		}
		if err := s.setAffinity(ctx, tx, n, c.id); err != nil {
			return moved, err
		}
		taken[c.host]++
		moved++
	}
	return moved, nil
}

func (s *simulator) addNode(ctx context.Context, tx *sql.Tx, g groupSpec, now time.Time, enrolled bool) error {
	s.names[g.prefix]++
	n := &simNode{uuid: newUUID(s.rng), group: g.group, driver: pickDriver(s.rng, g.drivers)}
	name := fmt.Sprintf("%s-%04d", g.prefix, s.names[g.prefix])
	if err := insertNode(ctx, tx, s.rng, n, name, g.resourceClass, now, enrolled); err != nil {
		return err
	}
	s.nodes[n.id] = n
	if enrolled {
		s.enrolled = append(s.enrolled, n.id)
	}
	return nil
}

// deleteNode is `baremetal node delete`.
func (s *simulator) deleteNode(ctx context.Context, tx *sql.Tx, id int64) error {
	n := s.nodes[id]
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id=?`, id); err != nil {
		return fmt.Errorf("deleting node %s: %w", n.uuid, err)
	}
	for _, c := range s.cond {
		delete(c.locks, id)
	}
	delete(s.nodes, id)
	return nil
}

// describe is a one-line summary of the fleet for the start-up log.
func (s *simulator) describe() string {
	groups := map[string]bool{}
	hts := map[string]bool{}
	for _, c := range s.cond {
		groups[fmt.Sprintf("%q", c.group)] = true
		for _, h := range c.hardwareTypes {
			hts[h] = true
		}
	}
	keys := func(m map[string]bool) string { return strings.Join(slices.Sorted(maps.Keys(m)), " ") }
	return fmt.Sprintf("%d conductors in groups %s with hardware types %s; %d nodes, %d of them served by no conductor",
		len(s.cond), keys(groups), keys(hts), len(s.nodes), orphans(s.view))
}
