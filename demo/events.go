package demo

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// run heartbeats and plays the events until ctx ends. The view is judged
// after an event and after a heartbeat interval, but never sooner than four
// times the last judgement took after it: the loop waits for the read, which
// holds SQLite's shared lock and so delays any commit, and where reading is
// slow (the race detector) the heartbeats still go out on time four fifths
// of the time.
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
		{atNovaDie, s.novaDie},
		{atEnroll, s.enroll},
		{atNovaUpdate, s.novaResourceUpdate},
		{atCrashBack, s.crashBack},
		{atNovaBack, s.novaBack},
		{atDrainRestart, s.drainRestart},
		{atNovaBackUpdate, s.novaResourceUpdate},
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
			if err := s.novaTick(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("demo: writing Nova's heartbeats", "err", err)
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
	return inTx(ctx, s.db, f)
}

// inTx runs f in one write transaction on db.
func inTx(ctx context.Context, db *sql.DB, f func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// tick is one heartbeat interval: every keepalive touches its conductor;
// the workers of running conductors advance (a stopping one exits once
// its work is done or graceful_shutdown_timeout has passed); working
// conductors take new short locks on the nodes the view maps to them;
// then the peers' periodic tasks run: _check_orphan_nodes and, every
// sync_local_state_interval, _sync_local_state.
func (s *simulator) tick(ctx context.Context) error {
	now := s.heartbeatTime()
	var released, failed, takenOver int
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range s.cond {
			if c.beating {
				if _, err := tx.ExecContext(ctx, `UPDATE conductors SET updated_at=?, online=? WHERE hostname=?`,
					sqlaTime(now), c.online, c.host); err != nil {
					return err
				}
				c.lastBeat = now
			}
			if !c.working && c.stopping.IsZero() {
				continue // crashed or stopped: no worker
			}
			if err := s.work(ctx, tx, c, now); err != nil {
				return err
			}
			if !c.stopping.IsZero() {
				s.exitWhenDone(c, now)
				continue
			}
			if s.rng.IntN(10) < 3 {
				if err := s.lockOne(ctx, tx, c, 2+s.rng.IntN(7), now); err != nil {
					return err
				}
			}
		}
		var err error
		if released, failed, err = s.checkOrphans(ctx, tx, now); err != nil {
			return err
		}
		takenOver, err = s.syncLocalState(ctx, tx, now)
		return err
	})
	if released > 0 {
		s.log.Info("demo: peers broke the locks of a conductor whose heartbeat is older than heartbeat_timeout "+
			"(_check_orphan_nodes) and failed its deploys and cleanings; its other nodes in a step state stay there with no lock",
			"locks_released", released, "failed", failed, "look_at", "ironic_conductor_reserved_nodes, ironic_nodes_stuck")
	}
	if takenOver > 0 {
		s.log.Info("demo: conductors took over active nodes whose boot files another conductor prepared (_sync_local_state), "+
			"at most periodic_max_workers each per sync_local_state_interval",
			"nodes", takenOver, "periodic_max_workers", s.view.Rules.Settings().PeriodicMaxWorkers,
			"look_at", "ironic_nodes_affinity_unavailable, ironic_conductor_affinity_elsewhere_nodes")
	}
	return err
}

// work advances c's workers by a heartbeat: a deploy past its half sets
// conductor_affinity to c (do_node_deploy, ironic/conductor/deployments.py,
// once the deploy interface's prepare is done); a work that ends releases
// its lock (release_node; up to 21.x a stopping conductor has cleared it
// already) and moves the node to the state it ends in.
func (s *simulator) work(ctx context.Context, tx *sql.Tx, c *simConductor, now time.Time) error {
	for _, id := range slices.Sorted(maps.Keys(c.locks)) {
		n := s.nodes[id]
		if n == nil {
			delete(c.locks, id)
			continue
		}
		left := c.locks[id] - 1
		if n.affinityAt > 0 && left <= n.affinityAt {
			if err := s.setAffinity(ctx, tx, n, c.id); err != nil {
				return err
			}
			n.affinityAt = 0
		}
		if left > 0 {
			c.locks[id] = left
			continue
		}
		delete(c.locks, id)
		state := cmp.Or(n.target, n.state)
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, provision_state=?, updated_at=? WHERE id=?`,
			state, sqlaTime(now), id); err != nil {
			return err
		}
		n.reservation, n.state, n.target = "", state, ""
	}
	return nil
}

// exitWhenDone ends a stopping conductor's process once its workers are
// done or graceful_shutdown_timeout has passed since the stop (0 in
// ironic.conf, negative here: no timeout): RPCService.stop waits for its
// reservations (22.0+, 6a9e319fb) or the executor's workers (before) up to
// that timeout. The workers it leaves leave their nodes where they were
// (and, from 22.0, locked: rules.StopClearsLocks); the keepalive stops.
func (s *simulator) exitWhenDone(c *simConductor, now time.Time) {
	timeout := s.settings.GracefulShutdownTimeout
	if len(c.locks) > 0 && (timeout <= 0 || now.Sub(c.stopping) < timeout) {
		return
	}
	left := len(c.locks)
	clear(c.locks)
	c.beating, c.stopping = false, time.Time{}
	s.log.Info("demo: the stopping conductor exited, its keepalive with it", "conductor", c.host,
		"work_left_unfinished", left, "graceful_shutdown_timeout", timeout,
		"look_at", "ironic_conductor_state, ironic_nodes_stuck")
}

// checkOrphans is the peers' _check_orphan_nodes (ironic/conductor/
// manager.py, 5694b98fc): for every conductor get_offline_conductors
// returns (rules.OfflineForOrphans), a working peer whose rings map a node
// locked under that exact name (rules.LockReleasable) releases the lock
// and fails the node if deploying or cleaning (rules.OrphanFailedState).
// The offline conductor's own worker, if it still runs (a 32.0+ drain
// past heartbeat_timeout), loses the node.
func (s *simulator) checkOrphans(ctx context.Context, tx *sql.Tx, now time.Time) (released, failed int, err error) {
	r := s.view.Rules
	for _, c := range s.cond {
		if !r.OfflineForOrphans(c.online, c.lastBeat, now) {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(s.nodes)) {
			n := s.nodes[id]
			if n.reservation == "" || !rules.LockReleasable(n.reservation, c.host) {
				continue
			}
			if peer := s.byHost[s.servedBy(n)]; peer == nil || peer == c || !peer.working {
				continue
			}
			state := n.state
			if to, ok := rules.OrphanFailedState(n.state, n.maintenance); ok {
				state = to
				failed++
			}
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, provision_state=?, updated_at=? WHERE id=?`,
				state, sqlaTime(now), id); err != nil {
				return released, failed, err
			}
			n.reservation, n.state, n.target, n.affinityAt = "", state, "", 0
			delete(c.locks, id)
			released++
		}
	}
	return released, failed, nil
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

// startWork has c start up to count works on unlocked nodes in state from
// that the view maps to it: each node locked by c, in state to until the
// work ends in target, beats heartbeats later. A deploy ("deploying") sets
// conductor_affinity to c halfway (work). It returns the nodes.
func (s *simulator) startWork(ctx context.Context, tx *sql.Tx, c *simConductor, from, to, target string, count, beats int, now time.Time) ([]*simNode, error) {
	served, ok := s.view.Conductor(c.host)
	if !ok {
		return nil, nil
	}
	var started []*simNode
	for _, i := range served.Nodes {
		if len(started) == count {
			break
		}
		n := s.nodes[s.view.Nodes[i].ID]
		if n == nil || n.reservation != "" || n.state != from || n.maintenance {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=?, provision_state=?, target_provision_state=?,
  provision_updated_at=?, updated_at=? WHERE id=? AND reservation IS NULL`,
			c.host, to, target, sqlaTime(now), sqlaTime(now), n.id); err != nil {
			return started, err
		}
		n.reservation, n.state, n.target = c.host, to, target
		c.locks[n.id] = beats
		if to == "deploying" {
			n.affinityAt = beats / 2
		}
		started = append(started, n)
	}
	return started, nil
}

// clearLocks is clear_node_reservations_for_conductor. Its workers (c.locks)
// are the caller's.
func (s *simulator) clearLocks(ctx context.Context, tx *sql.Tx, c *simConductor, now time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE nodes SET reservation=NULL, updated_at=? WHERE reservation LIKE ?`,
		sqlaTime(now), c.host)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	for _, node := range s.nodes {
		if node.reservation == c.host {
			node.reservation = ""
		}
	}
	return int(n), nil
}

func (s *simulator) victim(list []string, cycle int) *simConductor {
	return s.byHost[list[cycle%len(list)]]
}

// drain: the cycle's drain victim rebuilds a few of its active nodes (a
// deploy that holds its lock longer than graceful_shutdown_timeout), then
// stops gracefully (SIGTERM).
func (s *simulator) drain(ctx context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := s.startWork(ctx, tx, c, "active", "deploying", "active", locksAtDrain, workBeats, s.now())
		return err
	})
	if err != nil {
		return fmt.Errorf("draining %s: %w", c.host, err)
	}
	return s.stop(ctx, c)
}

// stop is a graceful stop of c as its release does it (del_host, and
// RPCService.stop from 22.0): up to 21.x its locks cleared first
// (rules.StopClearsLocks), its workers going on without them; it
// unregisters (hardware interfaces deleted, online=false); its keepalive
// goes on writing online=false until it exits on 23.1-31.x
// (rules.DrainHeartbeats, 3f9151163) and stops now elsewhere (halted in
// del_host from 32.0, bbf57b1c2; before 23.1 del_host stops it first). It
// exits in tick (exitWhenDone).
func (s *simulator) stop(ctx context.Context, c *simConductor) error {
	return s.stopping(ctx, c, true)
}

// stopWithoutUnregister is SIGUSR1 then SIGTERM (a quick restart):
// del_host(deregister=False): the same, but it does not unregister: online
// stays true where the keepalive stops at once
// (rules.StopWithoutUnregisterKeepsOnline); on 23.1-31.x the keepalive
// writes online=false until the process exits.
func (s *simulator) stopWithoutUnregister(ctx context.Context, c *simConductor) error {
	return s.stopping(ctx, c, false)
}

// stopping is stop, unregistering or not.
func (s *simulator) stopping(ctx context.Context, c *simConductor, unregister bool) error {
	r := s.view.Rules
	var released int
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if r.StopClearsLocks() {
			var err error
			if released, err = s.clearLocks(ctx, tx, c, now); err != nil {
				return err
			}
		}
		if !unregister {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conductor_hardware_interfaces WHERE conductor_id=?`, c.id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE conductors SET online=0, updated_at=? WHERE hostname=? AND online=1`,
			sqlaTime(now), c.host)
		return err
	})
	if err != nil {
		return fmt.Errorf("stopping %s: %w", c.host, err)
	}
	c.working, c.stopping = false, now
	if unregister {
		c.online, c.lastBeat = false, now
	} else {
		c.online = r.StopWithoutUnregisterKeepsOnline()
	}
	c.beating = r.DrainHeartbeats()
	if !unregister {
		s.log.Info("demo: a conductor stops without unregistering (SIGUSR1, then SIGTERM) as Ironic "+r.Release().String()+" does",
			"conductor", c.host, "online", c.online, "heartbeats_until_exit", c.beating, "locks_released", released,
			"look_at", "ironic_conductor_state")
		return nil
	}
	var how string
	switch {
	case r.StopClearsLocks():
		how = "it cleared its locks first and stopped heartbeating; its workers go on without locks until they end or graceful_shutdown_timeout"
	case r.DrainHeartbeats():
		how = "it keeps its locks and goes on heartbeating (online=false) until its work ends or graceful_shutdown_timeout"
	default:
		how = "it keeps its locks and stopped heartbeating: once its heartbeat is older than heartbeat_timeout its peers break its locks and fail its deploys"
	}
	s.log.Info("demo: a conductor stops gracefully (SIGTERM) as Ironic "+r.Release().String()+" does: it unregisters its hardware "+
		"interfaces and goes offline (online=false), which takes it out of its rings: its nodes move to the other conductors of "+
		"its group; "+how,
		"conductor", c.host, "conductor_group", c.group, "locks_released", released, "work_in_flight", len(c.locks),
		"look_at", "ironic_conductor_online, ironic_conductor_state, ironic_conductor_reserved_nodes, ironic_nodes_stuck")
	return nil
}

// crash: the cycle's crash victim rebuilds a few of its active nodes (or
// locks any) and dies (SIGKILL).
func (s *simulator) crash(ctx context.Context, cycle int) error {
	c := s.victim(crashVictims, cycle)
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		started, err := s.startWork(ctx, tx, c, "active", "deploying", "active", locksAtCrash, workBeats, now)
		for i := len(started); i < locksAtCrash && err == nil; i++ {
			err = s.lockOne(ctx, tx, c, workBeats, now)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("crashing %s: %w", c.host, err)
	}
	s.kill(c)
	s.log.Info("demo: a conductor crashed holding locks: online stays true and its heartbeats stop; once its last "+
		"heartbeat is older than heartbeat_timeout it turns dead, and its peers break its locks and fail its deploys",
		"conductor", c.host, "conductor_group", c.group, "locks_held", len(c.locks), "in", s.settings.HeartbeatTimeout,
		"look_at", "ironic_conductor_state, ironic_conductor_alive, ironic_conductor_hash_ring_member, ironic_conductor_reserved_nodes")
	return nil
}

// kill is SIGKILL: nothing more is written; its workers are gone.
func (s *simulator) kill(c *simConductor) {
	c.beating, c.working, c.stopping = false, false, time.Time{}
	clear(c.locks)
}

// start is prepare_host + init_host: clear stale locks, register, register
// the hardware interfaces, keepalive; then, with the view judged anew,
// _fail_transient_state (base_manager.py init_host, over
// STUCK_STATES_TREATED_AS_FAIL): the unlocked nodes the rings map to it in
// a state no conductor resumes are failed (rules.FailedState).
func (s *simulator) start(ctx context.Context, c *simConductor) (released, failed int, err error) {
	now := s.now()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if released, err = s.clearLocks(ctx, tx, c, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conductors SET drivers=?, conductor_group=?, version=?, updated_at=?, online=1
WHERE hostname=?`, jsonList(c.hardwareTypes), c.group, s.conductorVersion(), sqlaTime(now), c.host); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conductor_hardware_interfaces WHERE conductor_id=?`, c.id); err != nil {
			return err
		}
		return registerInterfaces(ctx, tx, c.id, c.hardwareTypes, now)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("starting %s: %w", c.host, err)
	}
	clear(c.locks)
	c.online, c.beating, c.working, c.stopping, c.lastBeat = true, true, true, time.Time{}, now
	if err := s.judge(ctx); err != nil {
		return released, 0, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range slices.Sorted(maps.Keys(s.nodes)) {
			n := s.nodes[id]
			to, ok := rules.FailedState(n.state)
			if !ok || n.reservation != "" || s.servedBy(n) != c.host {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET provision_state=?, provision_updated_at=?, updated_at=? WHERE id=?`,
				to, sqlaTime(now), sqlaTime(now), id); err != nil {
				return err
			}
			n.state, n.target = to, ""
			failed++
		}
		return nil
	})
	if err != nil {
		return released, failed, fmt.Errorf("starting %s: failing the nodes left in transient states: %w", c.host, err)
	}
	return released, failed, nil
}

func (s *simulator) crashBack(ctx context.Context, cycle int) error {
	c := s.victim(crashVictims, cycle)
	released, failed, err := s.start(ctx, c)
	if err != nil {
		return err
	}
	s.log.Info("demo: the crashed conductor restarted: it released the locks left under its name, failed the nodes it "+
		"serves left in a transient state, and heartbeats again",
		"conductor", c.host, "locks_released", released, "failed", failed)
	return nil
}

func (s *simulator) drainRestart(ctx context.Context, cycle int) error {
	c := s.victim(drainVictims, cycle)
	released, failed, err := s.start(ctx, c)
	if err != nil {
		return err
	}
	s.log.Info("demo: the stopped conductor started again: it rejoins its rings and takes back its share of the nodes; "+
		"it released the locks left under its name and failed the nodes it serves left in a transient state",
		"conductor", c.host, "conductor_group", c.group, "locks_released", released, "failed", failed,
		"look_at", "ironic_node_conductor_changes_total, ironic_nodes_stuck")
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
	var deleted int
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
		return nil
	})
	if err != nil {
		return fmt.Errorf("enrolling nodes: %w", err)
	}
	if deleted > 0 {
		s.log.Info("demo: the oldest enrolled nodes were deleted, so that the fleet stays bounded", "count", deleted)
	}
	s.log.Info("demo: new nodes enrolled", "count", nodesEnrolled, "conductor_group", group,
		"names", fmt.Sprintf("%s-%04d..%s-%04d", g.prefix, first, g.prefix, s.names[g.prefix]),
		"nodes", len(s.nodes), "look_at", "ironic_nodes, ironic_hash_ring_nodes")
	return nil
}
