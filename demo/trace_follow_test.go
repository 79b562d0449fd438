package demo

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// How the simulator's views are held to a trace: signal by signal, the
// same sequence of values, but for the one view a live sidecar may or may
// not catch. Once a conductor's heartbeat is older than heartbeat_timeout,
// the sidecar calls it stopped or dead at its next refresh (every second),
// and its peers release its locks at their next _check_orphan_nodes
// (ironic/conductor/manager.py, 5694b98fc; the same function on 21.4.0 and
// on master after 38.0.0), each at its own phase every
// check_provision_state_interval: the same threshold on both sides
// (rules.OfflineForOrphans, rules.State), so lock_holder_not_alive lasts
// from 0 to that window (releaseWindow), and a poll catches it or not.
// The simulator's peers act at its ticks: it shows the view for up to a
// tick, or two after a SIGKILL (their rings, judged a tick before, still
// hold the victim).

// The live fleet's ironic.conf (livefleet.py) that bounds that window.
const (
	// liveCheckInterval is [conductor]check_provision_state_interval.
	liveCheckInterval = 3 * time.Second
	// liveRingReset is [DEFAULT]hash_ring_reset_interval: how old a peer's
	// cached rings may be (ironic/common/hash_ring.py HashRingManager.ring).
	liveRingReset = 5 * time.Second
)

// releaseWindow is how long at most, in the live fleet, the locks of a
// conductor whose heartbeat went stale stay before its peers release them,
// by the state the sidecar shows it in. A peer releases only the locks of
// nodes its rings map to it (_check_orphan_nodes via iter_nodes,
// _mapped_to_this_conductor): a stopped conductor (online=false) left the
// rings when it unregistered, so a peer's next check releases them; a dead
// one (online=true: SIGKILL) stays in a peer's cached rings until they are
// rebuilt, up to hash_ring_reset_interval after its heartbeat went stale
// (a stopped one's were rebuilt before: hash_ring_reset_interval is
// shorter than heartbeat_timeout there).
func releaseWindow(state string) time.Duration {
	if state == string(rules.StateDead) {
		return liveRingReset + liveCheckInterval
	}
	return liveCheckInterval
}

// view is what the exporter showed at a look of the victim (its state and
// locks) and of the nodes of the scenario (stuck reasons, stranded boot
// files).
type view struct {
	at              time.Time
	state           string
	locks, stranded int
	stuck           []string
}

// span is one value of a signal as the simulator showed it: it began after
// from (the look before the first that showed it; the event for the first
// value) and ended by to (the first look showing another value; zero for
// the last value), so it lasted at most to-from.
type span struct {
	value    string
	from, to time.Time
	// state is the victim's state at the first look that showed it.
	state string
}

// spans are the values of a signal of views, in turn.
func spans(views []view, value func(view) string) []span {
	var out []span
	for i, v := range views {
		val := value(v)
		if len(out) > 0 && out[len(out)-1].value == val {
			continue
		}
		from := v.at
		if i > 0 {
			from = views[i-1].at
			out[len(out)-1].to = v.at
		}
		out = append(out, span{value: val, from: from, state: v.state})
	}
	return out
}

// timedSignals are signals (each on its own) with their spans.
type timedSignals struct {
	State, Locks, Stuck, Stranded []span
}

func timed(views []view) timedSignals {
	return timedSignals{
		State: spans(views, func(v view) string { return v.state }),
		Locks: spans(views, func(v view) string { return presence(v.locks) }),
		Stuck: spans(views, func(v view) string {
			s := slices.Clone(v.stuck)
			slices.Sort(s)
			return strings.Join(s, "+")
		}),
		Stranded: spans(views, func(v view) string { return presence(v.stranded) }),
	}
}

// without is the sequence of values of ss without those at skip, equal
// neighbours then merged.
func without(ss []span, skip []int) []string {
	var out []string
	for i, s := range ss {
		if slices.Contains(skip, i) || len(out) > 0 && out[len(out)-1] == s.value {
			continue
		}
		out = append(out, s.value)
	}
	return out
}

// subsets calls f with each subset of idx until f returns true.
func subsets(idx []int, f func([]int) bool) bool {
	for mask := 0; mask < 1<<len(idx); mask++ {
		var sub []int
		for b, i := range idx {
			if mask&(1<<b) != 0 {
				sub = append(sub, i)
			}
		}
		if f(sub) {
			return true
		}
	}
	return false
}

// follows reports whether the simulator's views follow the trace's
// signals: the same sequence of the victim's state and of its locks, and
// of the stuck reasons and the stranded boot files, except that the
// simulator may show, where the trace did not, a view the live sidecar may
// miss, and only that:
//   - lock_holder_not_alive between the victim's heartbeat going stale and
//     its peers' release, when it lasted no longer than releaseWindow for
//     the state the victim was in, and was not the simulator's last value
//     (a simulator whose peers never release, or release later, fails);
//   - stranded boot files inside such a skipped span: the victim's deploys,
//     on boot files it prepared, counted until a peer's release fails them
//     (deploy failed no longer needs them): the same window, the same
//     cause.
func follows(want signals, views []view) bool {
	got := timed(views)
	values := func(ss []span) []string { return without(ss, nil) }
	if !slices.Equal(values(got.State), want.State) || !slices.Equal(values(got.Locks), want.Locks) {
		return false
	}
	var transient []int
	for i, s := range got.Stuck {
		if s.value == topology.StuckLockHolder.String() && !s.to.IsZero() &&
			s.to.Sub(s.from) <= releaseWindow(s.state) {
			transient = append(transient, i)
		}
	}
	return subsets(transient, func(skipped []int) bool {
		if !slices.Equal(without(got.Stuck, skipped), want.Stuck) {
			return false
		}
		var stranded []int
		for i, s := range got.Stranded {
			inside := slices.ContainsFunc(skipped, func(j int) bool {
				l := got.Stuck[j]
				return !s.from.Before(l.from) && !s.to.IsZero() && !s.to.After(l.to)
			})
			if s.value == presence(1) && inside {
				stranded = append(stranded, i)
			}
		}
		return subsets(stranded, func(skip []int) bool { return slices.Equal(without(got.Stranded, skip), want.Stranded) })
	})
}

// TestFollowsAcceptsOnlyTheReleaseWindow: the comparison leaves out a
// view the trace skipped only within the live peers' release window and
// before the simulator's last value.
func TestFollowsAcceptsOnlyTheReleaseWindow(t *testing.T) {
	t0 := time.Now()
	// a view every second: the victim in state before up to 12 s, holding
	// its lock, then in state after, locked (lock_holder_not_alive, its
	// boot files stranded) until release (never at 0), its boot files
	// stranded until unstrand (never at 0).
	views := func(before, after string, release, unstrand int) []view {
		var vs []view
		for s := 0; s <= 40; s++ {
			v := view{at: t0.Add(time.Duration(s) * time.Second), state: before, locks: 1}
			if s > 12 {
				v.state, v.locks = after, 0
				if release == 0 || s < release {
					v.locks, v.stuck = 1, []string{"lock_holder_not_alive"}
				}
				if unstrand == 0 || s < unstrand {
					v.stranded = 1
				}
			}
			vs = append(vs, v)
		}
		return vs
	}
	skipped := signals{State: []string{"alive", "dead"}, Locks: []string{"some", "none"}, Stuck: []string{""},
		Stranded: []string{"none"}}
	for _, c := range []struct {
		name              string
		before, after     string
		release, unstrand int
		want              signals
		follows           bool
	}{
		{"dead, released within hash_ring_reset_interval+check interval", "alive", "dead", 20, 20, skipped, true},
		{"dead, released later", "alive", "dead", 21, 21, skipped, false},
		{"dead, never released", "alive", "dead", 0, 0, skipped, false},
		{"dead, boot files stranded after the release", "alive", "dead", 20, 21, skipped, false},
		{"stopped, released within the check interval", "draining", "stopped", 15, 0,
			signals{State: []string{"draining", "stopped"}, Locks: []string{"some", "none"}, Stuck: []string{""},
				Stranded: []string{"none", "some"}}, true},
		{"stopped, released later", "draining", "stopped", 16, 0,
			signals{State: []string{"draining", "stopped"}, Locks: []string{"some", "none"}, Stuck: []string{""},
				Stranded: []string{"none", "some"}}, false},
		{"the view in the trace too", "alive", "dead", 30, 30,
			signals{State: []string{"alive", "dead"}, Locks: []string{"some", "none"},
				Stuck: []string{"", "lock_holder_not_alive", ""}, Stranded: []string{"none", "some", "none"}}, true},
	} {
		if got := follows(c.want, views(c.before, c.after, c.release, c.unstrand)); got != c.follows {
			t.Errorf("%s: follows %v, want %v", c.name, got, c.follows)
		}
	}
}

// describe is the simulator's signals with when each value was shown,
// seconds after the first view (the event).
func describe(views []view) string {
	if len(views) == 0 {
		return "no view"
	}
	t0 := views[0].at
	line := func(name string, ss []span) string {
		parts := make([]string, len(ss))
		for i, s := range ss {
			end := "to the end"
			if !s.to.IsZero() {
				end = fmt.Sprintf("gone by %vs", s.to.Sub(t0).Seconds())
			}
			parts[i] = fmt.Sprintf("%q (after %vs, %s)", s.value, s.from.Sub(t0).Seconds(), end)
		}
		return name + " " + strings.Join(parts, " ")
	}
	g := timed(views)
	return strings.Join([]string{line("state", g.State), line("locks", g.Locks), line("stuck", g.Stuck),
		line("stranded", g.Stranded)}, "\n")
}
