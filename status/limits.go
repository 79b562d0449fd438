package status

import (
	"cmp"
	"fmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// limitsData is where each conductor group stands against Ironic's
// concurrency limits (topology.Concurrency).
type limitsData struct {
	// PerGroup: the limits count each group's nodes apart.
	PerGroup bool
	Rows     []limitRow
}

type limitRow struct {
	Action, Group                      string
	InFlight, Counted, Limit, Headroom int
}

// buildLimits returns the limits' rows of t; nil when its release has none.
func buildLimits(t *topology.Topology) *limitsData {
	limits, ok := t.Rules.ConcurrencyLimits()
	if !ok {
		return nil
	}
	d := &limitsData{PerGroup: limits.PerGroup}
	for _, c := range t.Concurrency() {
		d.Rows = append(d.Rows, limitRow{Action: c.Action.String(), Group: c.ConductorGroup, InFlight: c.InFlight,
			Counted: c.Counted, Limit: c.Limit, Headroom: c.Headroom()})
	}
	return d
}

// limitProblems says, for the summary, which new actions Ironic refuses now:
// per group with per-group limits, once per action otherwise.
func limitProblems(d *limitsData) []string {
	if d == nil {
		return nil
	}
	var out []string
	said := map[string]bool{}
	for _, r := range d.Rows {
		if r.Headroom > 0 || said[r.Action] {
			continue
		}
		what := "deploys"
		if r.Action != "deploy" {
			what = "tear-downs and cleanings"
		}
		where := "of any node"
		if d.PerGroup {
			where = "in conductor group " + cmp.Or(r.Group, "(default)")
		} else {
			said[r.Action] = true
		}
		out = append(out, fmt.Sprintf("Ironic refuses new %s %s: %d in flight, max_concurrent_%s is %d.",
			what, where, r.Counted, r.Action, r.Limit))
	}
	return out
}

// conductorLimit is one action's line on a conductor's page: its own nodes
// in the action's states, and its group's standing against the limit.
type conductorLimit struct {
	Action                         string
	Mine, Counted, Limit, Headroom int
}

// conductorLimits are c's lines; nil before 21.1 (no limits).
func conductorLimits(t *topology.Topology, c *topology.ConductorInfo) []conductorLimit {
	if _, ok := t.Rules.ConcurrencyLimits(); !ok {
		return nil
	}
	mine := map[rules.Action]int{}
	for si, n := range c.ProvisionStates {
		if si < len(topology.ProvisionStates) {
			if a, ok := rules.ActionOf(topology.ProvisionStates[si]); ok {
				mine[a] += n
			}
		}
	}
	var out []conductorLimit
	for _, g := range t.Concurrency() {
		if g.ConductorGroup == c.ConductorGroup {
			out = append(out, conductorLimit{Action: g.Action.String(), Mine: mine[g.Action], Counted: g.Counted,
				Limit: g.Limit, Headroom: g.Headroom()})
		}
	}
	return out
}
