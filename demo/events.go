package demo

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
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
		{atDrainDone, s.drainDone},
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
