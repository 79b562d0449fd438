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

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The simulator plays Ironic's conductors against the database, writing
// exactly what Ironic's conductor code writes (ironic/conductor/base_manager.py
// and ironic/db/sqlalchemy/api.py of current Ironic):
//   - keepalive: every heartbeat interval touch_conductor sets
//     updated_at=now and online=(not shutting down);
//   - a graceful stop (del_host): clear_node_reservations_for_conductor,
//     then unregister (delete its conductor_hardware_interfaces rows,
//     online=false); the keepalive goes on with online=false while the
//     conductor's work finishes (draining), then stops;
//   - a crash: nothing is written any more: online stays true and its locks
//     stay stuck;
//   - a start (prepare_host + init_host): clear its stale locks, register
//     (online=true, updated_at=now), re-register hardware interfaces;
//   - locks: a conductor reserves a node the rings map to it for a few
//     heartbeats (reserve_node / release_node);
//   - enrolment: create_node of a few nodes (provision state enroll); the
//     oldest enrolled nodes are deleted again, so the fleet stays bounded;
//   - boot environments: a deployed node's conductor_affinity is the
//     conductor that prepared it; a crashing conductor leaves deploys in
//     wait call-back under its lock, failed when it restarts; the takeover
//     (_sync_local_state) moves the affinity of active nodes to the ring's
//     conductor once a cycle.
//
// The simulator keeps no rings of its own: what it knows of the fleet as
// Ironic sees it (node to conductor, liveness, ring membership) is its view,
// the topology topology.Build makes of a snapshot read through
// MultiConductor with the exporter's settings (Demo.Settings). Its own flags
// say only what a simulated process does (heartbeat, take locks). The view
// is judged after every event and heartbeat, or less often where reading is
// slow (see run), so the simulator and the page agree on every node, and
// the simulator logs the changes the page shows.

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
	// Cycle is the length of one round of scripted events.
	Cycle = 90 * time.Second
)

// Offsets of the scripted events in each cycle, at Speed 1.
const (
	atDrain        = 5 * time.Second
	atCrash        = 15 * time.Second
	atDrainDone    = 20 * time.Second
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
	locksAtCrash  = 3 // locks a crashing conductor takes just before
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
	working       bool          // the process works: takes and releases locks, takes over nodes
	locks         map[int64]int // node id -> heartbeats left to hold it
	deploying     []int64       // deploys it left in wait call-back when it crashed
}

type simNode struct {
	id                  int64
	uuid, group, driver string
	reservation         string
	state               string // provision_state
	affinity            int64  // conductor_affinity, 0 for NULL
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

	// source is the database as the exporter reads it; view is the
	// topology the simulator acts on (see judge), judgeTook how long the
	// last judgement took; present is the time of the latest heartbeats.
	source    topology.Source
	view      *topology.Topology
	judgeTook time.Duration
	present   time.Time
}

// newSimulator is the simulator of d's database, on the clock now.
func newSimulator(d *Demo, seed uint64, now func() time.Time) *simulator {
	return &simulator{db: d.db, log: d.log, speed: d.speed, settings: d.settings, now: now,
		rng: rand.New(rand.NewPCG(seed, 0x1c0d)), source: MultiConductor(d.reader),
		byHost: map[string]*simConductor{}, nodes: map[int64]*simNode{}, names: map[string]int{}}
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
			sqlaTime(created), sqlaTime(updated), conductorObjectVersion, c.host, jsonList(c.hardwareTypes), c.online, c.group)
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
	_, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=? WHERE online=1`, sqlaTime(s.heartbeatTime()))
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

func (s *simulator) setAffinity(ctx context.Context, tx *sql.Tx, n *simNode, id int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET conductor_affinity=? WHERE id=?`, id, n.id); err != nil {
		return fmt.Errorf("setting conductor_affinity of %s: %w", n.uuid, err)
	}
	n.affinity = id
	return nil
}

// takeOver is Ironic's _sync_local_state: each working conductor takes
// over the active, unlocked nodes the view's rings map to it whose boot
// environment another conductor prepared, and rebuilds it
// (_do_takeover sets conductor_affinity).
func (s *simulator) takeOver(ctx context.Context, tx *sql.Tx) (int, error) {
	moved := 0
	for _, n := range s.nodes {
		if n.state != "active" || n.reservation != "" {
			continue
		}
		c := s.byHost[s.servedBy(n)]
		if c == nil || !c.working || c.id == n.affinity {
			continue
		}
		if err := s.setAffinity(ctx, tx, n, c.id); err != nil {
			return moved, err
		}
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

// run heartbeats and plays the events until ctx ends. The view is judged
// after an event and after a heartbeat interval, but never sooner than four
// times the last judgement took after it: the loop waits for the read (and
// a read holds SQLite's shared lock, which delays any commit), so where
// reading is slow (the race detector) the heartbeats still go out on time
// four fifths of the time. Where it is quick, that is after every event and
// heartbeat.
func (s *simulator) run(ctx context.Context) {
	hb := time.NewTicker(s.scale(HeartbeatInterval))
	defer hb.Stop()
	// The scripted steps of a cycle.
	events := []struct {
		at time.Duration
		do func(ctx context.Context, cycle int) error
	}{
		{atDrain, s.drain},
		{atCrash, s.crash},
		{atDrainDone, s.drainDone},
		{atEnroll, s.enroll},
		{atCrashBack, s.crashBack},
		{atDrainRestart, s.drainRestart},
	}
	start := time.Now()
	cycle, next := 0, 0
	timer := time.NewTimer(time.Until(start.Add(s.scale(events[0].at))))
	defer timer.Stop()
	judged, due := time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			if err := s.tick(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("demo: writing heartbeats", "err", err)
			}
		case <-timer.C:
			if err := events[next].do(ctx, cycle); err != nil && ctx.Err() == nil {
				s.log.Warn("demo: simulating an event", "err", err)
			}
			due = true
			if next++; next == len(events) {
				next = 0
				cycle++
				start = start.Add(s.scale(Cycle))
			}
			timer.Reset(time.Until(start.Add(s.scale(events[next].at))))
		}
		since := time.Since(judged)
		if (due || since >= s.scale(HeartbeatInterval)) && since >= 4*s.judgeTook {
			judged, due = time.Now(), false
			if err := s.judge(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("demo: the simulator could not read the fleet; it acts on its last view", "err", err)
			}
		}
	}
}

// inTx runs f in one write transaction.
func (s *simulator) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// tick is one heartbeat interval: every keepalive touches its conductor,
// and working conductors release expired locks and take new ones on the
// nodes the view maps to them.
func (s *simulator) tick(ctx context.Context) error {
	now := s.heartbeatTime()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range s.cond {
			if c.beating {
				if _, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=?, online=? WHERE hostname=?`,
					sqlaTime(now), c.online, c.host); err != nil {
					return err
				}
			}
			if !c.working {
				continue
			}
			for id, left := range c.locks {
				if left > 1 {
					c.locks[id] = left - 1
					continue
				}
				// release_node
				if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, updated_at=? WHERE id=? AND reservation=?`,
					sqlaTime(now), id, c.host); err != nil {
					return err
				}
				s.nodes[id].reservation = ""
				delete(c.locks, id)
			}
			if s.rng.IntN(10) < 3 {
				if err := s.lockOne(ctx, tx, c, 2+s.rng.IntN(7), now); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// lockOne reserves a free node the view maps to c, for hold heartbeats, if
// it finds one.
func (s *simulator) lockOne(ctx context.Context, tx *sql.Tx, c *simConductor, hold int, now time.Time) error {
	served, ok := s.view.Conductor(c.host)
	if !ok || len(served.Nodes) == 0 {
		return nil
	}
	for range 30 {
		n := s.nodes[s.view.Nodes[served.Nodes[s.rng.IntN(len(served.Nodes))]].ID]
		if n == nil || n.reservation != "" { // deleted since, or locked
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=?, updated_at=? WHERE id=? AND reservation IS NULL`,
			c.host, sqlaTime(now), n.id); err != nil {
			return err
		}
		n.reservation = c.host
		c.locks[n.id] = hold
		return nil
	}
	return nil
}

// clearLocks is clear_node_reservations_for_conductor.
func (s *simulator) clearLocks(ctx context.Context, tx *sql.Tx, c *simConductor, now time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, updated_at=? WHERE reservation LIKE ?`,
		sqlaTime(now), c.host)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	for id := range c.locks {
		s.nodes[id].reservation = ""
	}
	clear(c.locks)
	return int(n), nil
}

func (s *simulator) victim(list []string, cycle int) *simConductor {
	return s.byHost[list[cycle%len(list)]]
}

// drain starts a graceful stop of the cycle's drain victim.
func (s *simulator) drain(ctx context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	var released int
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if released, err = s.clearLocks(ctx, tx, c, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conductor_hardware_interfaces WHERE conductor_id=?`, c.id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE conductors SET online=0, updated_at=? WHERE hostname=? AND online=1`,
			sqlaTime(now), c.host)
		return err
	})
	if err != nil {
		return fmt.Errorf("draining %s: %w", c.host, err)
	}
	c.online, c.working = false, false
	s.log.Info("demo: a conductor stops gracefully (drains): it releases its locks, unregisters its hardware interfaces "+
		"and goes offline (online=false), which takes it out of its rings: its nodes move to the other conductors of "+
		"its group; it keeps heartbeating while its work finishes",
		"conductor", c.host, "conductor_group", c.group, "locks_released", released,
		"look_at", "ironic_conductor_online, ironic_conductor_state, ironic_node_conductor_changes_total")
	return nil
}

// drainDone: the draining conductor's work is done; its keepalive stops.
func (s *simulator) drainDone(_ context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	c.beating = false
	s.log.Info("demo: the draining conductor finished its work and stopped heartbeating: "+
		"it turns stopped when its last heartbeat is older than heartbeat_timeout",
		"conductor", c.host, "in", s.settings.HeartbeatTimeout, "look_at", "ironic_conductor_state, ironic_conductor_alive")
	return nil
}

// crash: the cycle's crash victim takes a few locks and dies.
func (s *simulator) crash(ctx context.Context, cycle int) error {
	c := s.victim(crashVictims, cycle)
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for range locksAtCrash {
			if err := s.lockOne(ctx, tx, c, 1, now); err != nil {
				return err
			}
		}
		// One of them was being deployed: it waits for the ramdisk's
		// call-back, under the lock, with its boot files on c.
		for id := range c.locks {
			n := s.nodes[id]
			if n.state == "enroll" { // a deploy, or a rebuild of an active node
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET provision_state='wait call-back', target_provision_state='active',
  provision_updated_at=? WHERE id=?`, sqlaTime(now), id); err != nil {
				return err
			}
			n.state = "wait call-back"
			c.deploying = append(c.deploying, id)
			if err := s.setAffinity(ctx, tx, n, c.id); err != nil {
				return err
			}
			break
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("crashing %s: %w", c.host, err)
	}
	c.beating, c.working = false, false
	s.log.Info("demo: a conductor crashed holding locks: online stays true and its heartbeats stop; once its last "+
		"heartbeat is older than heartbeat_timeout it turns dead; its locks stay stuck until it comes back",
		"conductor", c.host, "conductor_group", c.group, "locks_held", len(c.locks), "in", s.settings.HeartbeatTimeout,
		"look_at", "ironic_conductor_state, ironic_conductor_alive, ironic_conductor_hash_ring_member, ironic_conductor_reserved_nodes")
	return nil
}

// start is prepare_host + init_host: clear stale locks, register, register
// the hardware interfaces, keepalive.
func (s *simulator) start(ctx context.Context, c *simConductor) (released int, err error) {
	now := s.now()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if released, err = s.clearLocks(ctx, tx, c, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conductors SET drivers=?, conductor_group=?, version=?, updated_at=?, online=1
WHERE hostname=?`, jsonList(c.hardwareTypes), c.group, conductorObjectVersion, sqlaTime(now), c.host); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conductor_hardware_interfaces WHERE conductor_id=?`, c.id); err != nil {
			return err
		}
		return registerInterfaces(ctx, tx, c.id, c.hardwareTypes, now)
	})
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", c.host, err)
	}
	c.online, c.beating, c.working = true, true, true
	return released, nil
}

func (s *simulator) crashBack(ctx context.Context, cycle int) error {
	c := s.victim(crashVictims, cycle)
	released, err := s.start(ctx, c)
	if err != nil {
		return err
	}
	// The deploys it left waiting fail, as _check_orphan_nodes and the
	// call-back timeout would have them.
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range c.deploying {
			n := s.nodes[id]
			if n == nil || n.state != "wait call-back" {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET provision_state='deploy failed', target_provision_state='active',
  provision_updated_at=? WHERE id=?`, sqlaTime(s.now()), id); err != nil {
				return err
			}
			n.state = "deploy failed"
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failing the deploys of %s: %w", c.host, err)
	}
	c.deploying = nil
	s.log.Info("demo: the crashed conductor restarted: it released its stuck locks and heartbeats again",
		"conductor", c.host, "locks_released", released)
	return nil
}

func (s *simulator) drainRestart(ctx context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	if _, err := s.start(ctx, c); err != nil {
		return err
	}
	s.log.Info("demo: the stopped conductor started again: it rejoins its rings and takes back its share of the nodes",
		"conductor", c.host, "conductor_group", c.group, "look_at", "ironic_node_conductor_changes_total")
	return nil
}

// enroll creates a few nodes in the cycle's group, as `baremetal node
// create` does.
func (s *simulator) enroll(ctx context.Context, cycle int) error {
	group := enrollGroups[cycle%len(enrollGroups)]
	i := slices.IndexFunc(fleetGroups, func(g groupSpec) bool { return g.group == group })
	g := fleetGroups[i]
	first := s.names[g.prefix] + 1
	now := s.now()
	var deleted, takenOver int
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for range nodesEnrolled {
			if err := s.addNode(ctx, tx, g, now, true); err != nil {
				return err
			}
		}
		for len(s.enrolled) > MaxEnrolled {
			if err := s.deleteNode(ctx, tx, s.enrolled[0]); err != nil {
				return err
			}
			s.enrolled = s.enrolled[1:]
			deleted++
		}
		var err error
		takenOver, err = s.takeOver(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("enrolling nodes: %w", err)
	}
	if takenOver > 0 {
		s.log.Info("demo: conductors took over active nodes whose boot files another conductor prepared (_sync_local_state)",
			"nodes", takenOver, "look_at", "ironic_nodes_affinity_unavailable, ironic_conductor_affinity_elsewhere_nodes")
	}
	if deleted > 0 {
		s.log.Info("demo: the oldest enrolled nodes were deleted, so that the fleet stays bounded", "count", deleted)
	}
	s.log.Info("demo: new nodes enrolled", "count", nodesEnrolled, "conductor_group", group,
		"names", fmt.Sprintf("%s-%04d..%s-%04d", g.prefix, first, g.prefix, s.names[g.prefix]),
		"nodes", len(s.nodes), "look_at", "ironic_nodes, ironic_hash_ring_nodes")
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
