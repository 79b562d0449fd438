package demo

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
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
//   - locks: a conductor reserves a node its ring maps to it for a few
//     heartbeats (reserve_node / release_node);
//   - enrolment: create_node of a few nodes (provision state enroll); the
//     oldest enrolled nodes are deleted again, so the fleet stays bounded;
//   - boot environments: a deployed node's conductor_affinity is the
//     conductor that prepared it; a crashing conductor leaves deploys in
//     wait call-back under its lock, failed when it restarts; the takeover
//     (_sync_local_state) moves the affinity of active nodes to the ring's
//     conductor once a cycle.
//
// The simulator's own rings (which nodes a working conductor locks) count
// every online, registered conductor; the exporter judges the fleet by the
// rules of a multi-conductor Ironic on MySQL (see the package doc), where a
// conductor whose heartbeat is older than heartbeat_timeout leaves its rings:
// a crashed conductor turns dead and its nodes move, which is what the page
// and the metrics show. The crashed conductor locks nothing meanwhile, so
// the two views never disagree on a lock.

// Base durations, at Speed 1.
const (
	// HeartbeatTimeout is the [conductor]heartbeat_timeout the demo runs
	// with (Ironic's default is 60s), so that changes show fast.
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

// Ring settings the simulator uses to take locks on the nodes a conductor
// serves (Ironic's defaults).
const (
	simPartitionExponent = 5
	simAlgorithm         = ring.MD5
)

type simConductor struct {
	id            int64
	host, group   string
	hardwareTypes []string
	online        bool          // the online column
	beating       bool          // the keepalive writes heartbeats
	registered    bool          // its conductor_hardware_interfaces rows exist
	working       bool          // takes and releases locks
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
	db     *sql.DB
	log    *slog.Logger
	speed  int
	rng    *rand.Rand
	cond   []*simConductor
	byHost map[string]*simConductor
	nodes  map[int64]*simNode
	// nodesBy groups node ids by "group:driver", the ring key.
	nodesBy map[string][]int64
	// names counts the nodes named per group prefix, for new names.
	names map[string]int
	rings map[string]*ring.Ring
	// enrolled are the ids of the nodes enrolled since start, oldest first.
	enrolled []int64
}

func (s *simulator) scale(d time.Duration) time.Duration { return d / time.Duration(s.speed) }

func ringKey(group, driver string) string { return group + ":" + driver }

// setup writes the initial fleet in one transaction.
func (s *simulator) setup(ctx context.Context, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed
	for _, spec := range fleetConductors {
		c := &simConductor{host: spec.host, group: spec.group, hardwareTypes: spec.hardwareTypes,
			online: !spec.stopped, beating: !spec.stopped, registered: !spec.stopped, working: !spec.stopped,
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
		if c.registered {
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
	s.rebuildRings()
	// The conductor that deployed each node in service prepared its boot
	// environment: one statement per conductor.
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
	// Heartbeats last, so that they are fresh when the exporter first reads.
	if _, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=? WHERE online=1`, sqlaTime(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *simulator) setAffinity(ctx context.Context, tx sqlExecer, n *simNode, id int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET conductor_affinity=? WHERE id=?`, id, n.id); err != nil {
		return fmt.Errorf("setting conductor_affinity of %s: %w", n.uuid, err)
	}
	n.affinity = id
	return nil
}

// takeOver is Ironic's _sync_local_state: each working conductor takes
// over the active, unlocked nodes the ring maps to it whose boot
// environment another conductor prepared, and rebuilds it
// (_do_takeover sets conductor_affinity).
func (s *simulator) takeOver(ctx context.Context, tx sqlExecer) (int, error) {
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

func (s *simulator) addNode(ctx context.Context, tx sqlExecer, g groupSpec, now time.Time, enrolled bool) error {
	s.names[g.prefix]++
	n := newNode{uuid: newUUID(s.rng), name: fmt.Sprintf("%s-%04d", g.prefix, s.names[g.prefix]),
		group: g.group, driver: pickDriver(s.rng, g.drivers)}
	id, state, err := insertNode(ctx, tx, s.rng, n, g.resourceClass, now, enrolled)
	if err != nil {
		return err
	}
	k := ringKey(n.group, n.driver)
	s.nodes[id] = &simNode{id: id, uuid: n.uuid, group: n.group, driver: n.driver, state: state}
	s.nodesBy[k] = append(s.nodesBy[k], id)
	if enrolled {
		s.enrolled = append(s.enrolled, id)
	}
	return nil
}

// deleteNode is `baremetal node delete`.
func (s *simulator) deleteNode(ctx context.Context, tx sqlExecer, id int64) error {
	n := s.nodes[id]
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id=?`, id); err != nil {
		return fmt.Errorf("deleting node %s: %w", n.uuid, err)
	}
	for _, c := range s.cond {
		delete(c.locks, id)
	}
	k := ringKey(n.group, n.driver)
	s.nodesBy[k] = slices.DeleteFunc(s.nodesBy[k], func(x int64) bool { return x == id })
	delete(s.nodes, id)
	return nil
}

// rebuildRings computes Ironic's rings on SQLite: every online conductor
// with registered hardware interfaces, heartbeat or not.
func (s *simulator) rebuildRings() {
	hosts := map[string][]string{}
	for _, c := range s.cond {
		if !c.online || !c.registered {
			continue
		}
		for _, ht := range c.hardwareTypes {
			k := ringKey(c.group, ht)
			hosts[k] = append(hosts[k], c.host)
		}
	}
	s.rings = map[string]*ring.Ring{}
	for k, hs := range hosts {
		r, err := ring.New(hs, simPartitionExponent, simAlgorithm)
		if err != nil {
			s.log.Warn("demo: building a ring", "ring", k, "err", err)
			continue
		}
		s.rings[k] = r
	}
}

// servedBy is the conductor the rings map the node to, or "".
func (s *simulator) servedBy(n *simNode) string {
	r := s.rings[ringKey(n.group, n.driver)]
	if r == nil {
		return ""
	}
	h, _ := r.Get([]byte(n.uuid))
	return h
}

// unserved counts the nodes no ring serves.
func (s *simulator) unserved() int {
	count := 0
	for k, ids := range s.nodesBy {
		if s.rings[k] == nil {
			count += len(ids)
		}
	}
	return count
}

// event is one scripted step of a cycle.
type event struct {
	at time.Duration
	do func(ctx context.Context, cycle int) error
}

func (s *simulator) events() []event {
	return []event{
		{atDrain, s.drain},
		{atCrash, s.crash},
		{atDrainDone, s.drainDone},
		{atEnroll, s.enroll},
		{atCrashBack, s.crashBack},
		{atDrainRestart, s.drainRestart},
	}
}

// run heartbeats and plays the events until ctx ends.
func (s *simulator) run(ctx context.Context) {
	hb := time.NewTicker(s.scale(HeartbeatInterval))
	defer hb.Stop()
	events := s.events()
	start := time.Now()
	cycle, next := 0, 0
	timer := time.NewTimer(time.Until(start.Add(s.scale(events[0].at))))
	defer timer.Stop()
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
			if next++; next == len(events) {
				next = 0
				cycle++
				start = start.Add(s.scale(Cycle))
			}
			timer.Reset(time.Until(start.Add(s.scale(events[next].at))))
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

// tick is one heartbeat interval: every keepalive touches its conductor, and
// working conductors release expired locks and take new ones.
func (s *simulator) tick(ctx context.Context) error {
	now := time.Now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range s.cond {
			if !c.beating {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=?, online=? WHERE hostname=?`,
				sqlaTime(now), c.online, c.host); err != nil {
				return err
			}
		}
		for _, c := range s.cond {
			if !c.working {
				continue
			}
			for id, left := range c.locks {
				if left > 1 {
					c.locks[id] = left - 1
					continue
				}
				if err := s.release(ctx, tx, c, id, now); err != nil {
					return err
				}
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

// lockOne reserves a free node the rings map to c, for hold heartbeats, if
// it finds one.
func (s *simulator) lockOne(ctx context.Context, tx *sql.Tx, c *simConductor, hold int, now time.Time) error {
	for range 30 {
		ht := c.hardwareTypes[s.rng.IntN(len(c.hardwareTypes))]
		ids := s.nodesBy[ringKey(c.group, ht)]
		if len(ids) == 0 {
			continue
		}
		n := s.nodes[ids[s.rng.IntN(len(ids))]]
		if n.reservation != "" || s.servedBy(n) != c.host {
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

func (s *simulator) release(ctx context.Context, tx *sql.Tx, c *simConductor, id int64, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, updated_at=? WHERE id=? AND reservation=?`,
		sqlaTime(now), id, c.host); err != nil {
		return err
	}
	s.nodes[id].reservation = ""
	delete(c.locks, id)
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

func (s *simulator) timeout() time.Duration { return s.scale(HeartbeatTimeout) }

// drain starts a graceful stop of the cycle's drain victim.
func (s *simulator) drain(ctx context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	before := s.unserved()
	var released int
	now := time.Now()
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
	c.online, c.registered, c.working = false, false, false
	s.rebuildRings()
	attrs := []any{"conductor", c.host, "conductor_group", c.group, "locks_released", released,
		"look_at", "ironic_conductor_online, ironic_conductor_state, ironic_node_conductor_changes_total"}
	if after := s.unserved(); after > before {
		attrs = append(attrs, "nodes_left_without_conductor", after-before,
			"look_at_too", "ironic_nodes_without_conductor")
	}
	s.log.Info("demo: a conductor stops gracefully (drains): it releases its locks and goes offline (online=false), "+
		"leaves its rings, and its nodes move to the other conductors of its group; it keeps heartbeating while its "+
		"work finishes, so Ironic's API still calls it alive", attrs...)
	return nil
}

// drainDone: the draining conductor's work is done; its keepalive stops.
func (s *simulator) drainDone(_ context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	c.beating = false
	s.log.Info("demo: the draining conductor finished its work and stopped heartbeating: "+
		"ironic_conductor_alive turns 0 when its last heartbeat is older than heartbeat_timeout",
		"conductor", c.host, "in", s.timeout(), "look_at", "ironic_conductor_alive")
	return nil
}

// crash: the cycle's crash victim takes a few locks and dies.
func (s *simulator) crash(ctx context.Context, cycle int) error {
	c := s.victim(crashVictims, cycle)
	now := time.Now()
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
	s.log.Info("demo: a conductor crashed holding locks: online stays true and its heartbeats stop; after "+
		"heartbeat_timeout its state turns dead (alive=False in the API), Ironic takes it out of its rings and "+
		"its nodes move to the other conductors of its group; its locks stay stuck until it comes back", "conductor", c.host, "conductor_group", c.group,
		"locks_held", len(c.locks), "in", s.timeout(),
		"look_at", "ironic_conductor_alive, ironic_conductor_hash_ring_member, ironic_conductor_reserved_nodes")
	return nil
}

// start is prepare_host + init_host: clear stale locks, register, register
// the hardware interfaces, keepalive.
func (s *simulator) start(ctx context.Context, c *simConductor) (released int, err error) {
	now := time.Now()
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
	c.online, c.registered, c.beating, c.working = true, true, true, true
	s.rebuildRings()
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
  provision_updated_at=? WHERE id=?`, sqlaTime(time.Now()), id); err != nil {
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
	now := time.Now()
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
	keys := func(m map[string]bool) string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	return fmt.Sprintf("%d conductors in groups %s with hardware types %s; %d nodes, %d of them served by no conductor",
		len(s.cond), keys(groups), keys(hts), len(s.nodes), s.unserved())
}
