package demo

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The traces in testdata/traces are what the sidecar showed beside real
// Ironic conductors (conformance/live/livefleet.py --trace: one JSON line
// per distinct view of a poll, and a "mark" line per signal the harness
// gave a conductor), recorded with the live fleet's settings (liveSettings).
// The simulator is held to them: the same event, on the same release, must
// give the same sequence of states on the sidecar, but for the short view
// a live poll may miss (follows, trace_follow_test.go).

// traceLine is one line of a trace.
type traceLine struct {
	Release, Backend, Scenario string
	// Mark is a signal name (SIGTERM, SIGKILL, SIGUSR2...) or "start", given
	// to Conductor; empty on a view line.
	Mark, Conductor string
	// The sidecar's view: ironic_conductor_state by hostname, reserved
	// nodes by hostname, ironic_nodes_affinity_unavailable summed,
	// ironic_nodes_stuck summed by reason (only those above zero).
	States   map[string]string
	Locks    map[string]int
	Stranded int
	Stuck    map[string]int
}

// signals are the sequences of distinct values, each signal on its own,
// of the event's victim as the sidecar shows it: its state, whether it
// holds locks, the stuck reasons among the event's nodes, whether boot
// files are stranded. Each signal apart: a poll (or a tick) may see two of
// them change in either order.
type signals struct {
	State, Locks, Stuck, Stranded []string
}

func (s *signals) add(state string, locks int, stuck []string, stranded int) {
	push := func(seq *[]string, v string) {
		if len(*seq) == 0 || (*seq)[len(*seq)-1] != v {
			*seq = append(*seq, v)
		}
	}
	push(&s.State, state)
	push(&s.Locks, presence(locks))
	slices.Sort(stuck)
	push(&s.Stuck, strings.Join(stuck, "+"))
	push(&s.Stranded, presence(stranded))
}

func presence(n int) string {
	if n > 0 {
		return "some"
	}
	return "none"
}

func (s signals) String() string {
	return fmt.Sprintf("state %v\nlocks %v\nstuck %q\nstranded %v", s.State, s.Locks, s.Stuck, s.Stranded)
}

// readTrace reads the signals of a scenario of file (a scenario whose name
// starts with scenario): the views after the first mark of the signal mark
// up to the next start of a conductor or signal to another one (the
// harness's recovery), and the trace's release. A view after the mark
// still equal to the last one before it is the sidecar not refreshed yet
// (every second): it tells nothing of the event and is left out.
func readTrace(t *testing.T, file, scenario, mark string) (signals, rules.Release) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "traces", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		sig      signals
		victim   string
		release  string
		last     traceLine // the last view line (the trace writes a view when it differs from the last)
		lastSeen bool      // last is the view before the mark, not refreshed since
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l traceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !strings.HasPrefix(l.Scenario, scenario) {
			if l.Mark == "" {
				last = l
			}
			continue
		}
		release = l.Release
		switch {
		case victim == "" && l.Mark == mark:
			victim, lastSeen = l.Conductor, true
		case victim == "" && l.Mark == "":
			last = l
		case victim != "" && (l.Mark == "start" || l.Mark != "" && l.Conductor != victim):
			return sig, rules.MustRelease(release)
		case victim != "" && l.Mark == "":
			if lastSeen && sameView(l, last) {
				continue
			}
			lastSeen = false
			l.addTo(&sig, victim)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if victim == "" {
		t.Fatalf("%s: no %s in a scenario %q", file, mark, scenario)
	}
	return sig, rules.MustRelease(release)
}

// sameView reports whether two lines show the same view.
func sameView(a, b traceLine) bool {
	return maps.Equal(a.States, b.States) && maps.Equal(a.Locks, b.Locks) && a.Stranded == b.Stranded &&
		maps.Equal(a.Stuck, b.Stuck)
}

func (l *traceLine) addTo(s *signals, victim string) {
	stuck := make([]string, 0, len(l.Stuck))
	for reason, n := range l.Stuck {
		if n > 0 {
			stuck = append(stuck, reason)
		}
	}
	s.add(l.States[victim], l.Locks[victim], stuck, l.Stranded)
}

// liveSettings are the live fleet's ironic.conf (livefleet.py): the
// simulator runs with them when held to its traces.
func liveSettings(release rules.Release) topology.Settings {
	return topology.Settings{Release: release, Settings: rules.Settings{HeartbeatTimeout: 12 * time.Second,
		GracefulShutdownTimeout: 3 * time.Second, PeriodicMaxWorkers: 4, SyncLocalStateInterval: 10 * time.Second}}
}

// traceScenario is a live scenario as the simulator plays it: the victim
// starts works (from -> to, ending in target), then event happens to it;
// the nodes looked at are those works', or with no work (from ""), the
// active nodes whose boot files the victim prepared.
type traceScenario struct {
	file, scenario, mark string
	from, to, target     string
	// prepared: the victim prepared the nodes' boot files before (the
	// harness deployed them in an earlier scenario: conductor_affinity
	// stays after a tear-down); else they were never deployed.
	prepared bool
	event    func(ctx context.Context, s *simulator, c *simConductor) error
}

var (
	stopEvent = func(ctx context.Context, s *simulator, c *simConductor) error { return s.stop(ctx, c) }
	killEvent = func(_ context.Context, s *simulator, c *simConductor) error { s.kill(c); return nil }
	usr1Event = func(ctx context.Context, s *simulator, c *simConductor) error { return s.stopWithoutUnregister(ctx, c) }
)

// traceScenarios are the live scenarios the traces hold.
var traceScenarios = []traceScenario{
	// SIGTERM while the victim tears nodes down, past graceful_shutdown_timeout.
	{"21.4-mysql.jsonl", "SIGTERM during tear-downs", "SIGTERM", "active", "deleting", "available", true, stopEvent},
	// SIGKILL while the victim deploys.
	{"21.4-mysql.jsonl", "SIGKILL holding deploy locks", "SIGKILL", "available", "deploying", "active", true, killEvent},
	// SIGUSR1 then SIGTERM, no work in flight: the nodes are the victim's
	// deployed ones, whose boot files it prepared.
	{"21.4-mysql.jsonl", "SIGUSR1 stop", "SIGUSR1", "", "", "", true, usr1Event},
	// The same three on 39.0. Neither trace's takeover is held: its views
	// end while the victim's boot files are still stranded (the harness
	// stops polling once the database has moved them), where the simulator
	// goes on to the end of the takeover.
	{"39.0-postgresql-stops.jsonl", "SIGTERM during tear-downs", "SIGTERM", "active", "deleting", "available", true, stopEvent},
	{"39.0-postgresql-stops.jsonl", "SIGKILL holding deploy locks", "SIGKILL", "available", "deploying", "active", true, killEvent},
	{"39.0-postgresql-stops.jsonl", "SIGUSR1 stop", "SIGUSR1", "", "", "", true, usr1Event},
	// SIGUSR2 (a drain: the graceful stop, drain_shutdown_timeout) while it deploys.
	{"39.0-postgresql.jsonl", "SIGUSR2 drain with deploys in flight", "SIGUSR2", "available", "deploying", "active", false, stopEvent},
}

// simulate plays sc on a driven demo of release and returns the views
// the exporter shows after the event, of the victim and the nodes it worked
// on (its work started before): at the event, then every half heartbeat
// interval, between the simulator's ticks as well as after them, so that a
// view that lasts less than a tick shows, as the live sidecar, refreshing
// every second, may see one.
func simulate(t *testing.T, sc traceScenario, release rules.Release) []view {
	t.Helper()
	x := drive(t, liveSettings(release))
	c := x.sim.victim(drainVictims, 0)
	x.tick()
	ctx, cancel := x.ctx()
	defer cancel()
	var work []*simNode
	err := x.sim.inTx(ctx, func(tx *sql.Tx) error {
		if sc.from == "" {
			for _, id := range slices.Sorted(maps.Keys(x.sim.nodes)) {
				if n := x.sim.nodes[id]; n.state == "active" && n.affinity == c.id {
					work = append(work, n)
				}
			}
			return nil
		}
		var err error
		// as deploy_delay 12: the work outlasts graceful_shutdown_timeout
		if work, err = x.sim.startWork(ctx, tx, c, sc.from, sc.to, sc.target, 3, 6, x.clock.Now()); err != nil {
			return err
		}
		for _, n := range work {
			id := int64(0) // never deployed: NULL
			if sc.prepared {
				id = c.id
			}
			if err := x.sim.setAffinity(ctx, tx, n, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(work) == 0 {
		t.Fatalf("%s: starting the work of %s: %d nodes, %v", sc.scenario, c.host, len(work), err)
	}
	x.judge(ctx)
	var views []view
	look := func() {
		exp := x.exporterView()
		v := view{at: x.clock.Now(), state: string(conductorOf(t, exp, c.host).State)}
		stuck := map[string]bool{}
		for _, w := range work {
			n, ok := exp.Node(w.uuid)
			if !ok {
				t.Fatalf("node %s gone", w.uuid)
			}
			if n.Reservation != nil && *n.Reservation == c.host {
				v.locks++
			}
			if n.Stuck != topology.NotStuck {
				stuck[n.Stuck.String()] = true
			}
			if n.Affinity == topology.AffinityNotAlive && (topology.InProgress(n.ProvisionState) ||
				n.ProvisionState != nil && *n.ProvisionState == "active") {
				v.stranded++
			}
		}
		v.stuck = slices.Collect(maps.Keys(stuck))
		views = append(views, v)
	}
	if err := sc.event(ctx, x.sim, c); err != nil {
		t.Fatal(err)
	}
	x.judge(ctx)
	look()
	for end := x.clock.Now().Add(45 * time.Second); x.clock.Now().Before(end); {
		x.clock.Add(HeartbeatInterval / 2)
		look()
		x.clock.Add(HeartbeatInterval - HeartbeatInterval/2)
		x.tickNow()
		look()
	}
	return views
}

// TestSimulatorFollowsLiveTraces: for each live scenario, the simulator
// of the trace's release, driven through the same event, shows the same
// sequence of states, locks, stuck reasons and stranded boot files as the
// sidecar showed beside the real conductors, but for a view the live
// sidecar may miss (follows).
func TestSimulatorFollowsLiveTraces(t *testing.T) {
	for _, sc := range traceScenarios {
		t.Run(strings.TrimSuffix(sc.file, ".jsonl")+" "+sc.scenario, func(t *testing.T) {
			t.Parallel() // each drives its own simulator and database
			want, release := readTrace(t, sc.file, sc.scenario, sc.mark)
			if got := simulate(t, sc, release); !follows(want, got) {
				t.Errorf("Ironic %s, %s: after the event the simulator shows (seconds after the event)\n%s\nthe live fleet showed after the signal\n%s",
					release, sc.scenario, describe(got), want)
			}
		})
	}
}

// TestTracesTellReleasesApart: the traces hold the simulator to its
// release: played as another release, the same event does not follow the
// trace (21.4 clears its locks at SIGTERM, 39.0 keeps them until peers
// break them; 21.4's SIGUSR1 stop stays online, 29.0's writes online=0).
func TestTracesTellReleasesApart(t *testing.T) {
	for _, c := range []struct {
		file, scenario, as string
	}{
		{"21.4-mysql.jsonl", "SIGTERM during tear-downs", rules.Newest.String()},
		{"39.0-postgresql-stops.jsonl", "SIGTERM during tear-downs", "21.4"},
		{"21.4-mysql.jsonl", "SIGUSR1 stop", "29.0"},
		{"39.0-postgresql-stops.jsonl", "SIGUSR1 stop", "29.0"},
		{"39.0-postgresql.jsonl", "SIGUSR2 drain with deploys in flight", "21.4"},
	} {
		t.Run(strings.TrimSuffix(c.file, ".jsonl")+" "+c.scenario+" as "+c.as, func(t *testing.T) {
			t.Parallel()
			i := slices.IndexFunc(traceScenarios, func(s traceScenario) bool { return s.file == c.file && s.scenario == c.scenario })
			sc := traceScenarios[i]
			want, release := readTrace(t, sc.file, sc.scenario, sc.mark)
			if got := simulate(t, sc, rules.MustRelease(c.as)); follows(want, got) {
				t.Errorf("%s: the simulator of %s follows the trace of %s:\n%s", c.scenario, c.as, release, describe(got))
			}
		})
	}
}
