package topology

import (
	"cmp"
	"slices"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// ActionKey is a limited action and a conductor group.
type ActionKey struct {
	Action         rules.Action
	ConductorGroup string
}

// ConcurrencyInfo is how close a conductor group is to the limit Ironic
// applies to one action: when Counted reaches Limit, Ironic refuses that
// action on the group's nodes (ConcurrentActionLimit, see
// rules.ConcurrencyLimits).
type ConcurrencyInfo struct {
	ActionKey
	// InFlight counts the group's nodes in the action's provision states.
	InFlight int
	// Counted is the count the group's conductors compare with the limit:
	// InFlight when the limits are per group, every group's otherwise.
	Counted int
	// Limit is the limit of the action.
	Limit int
}

// Headroom is how many more actions Ironic accepts for the group's nodes
// now; 0 or less: it refuses them.
func (c ConcurrencyInfo) Headroom() int { return c.Limit - c.Counted }

// Concurrency returns, for each limited action and each conductor group
// that has a conductor or nodes in the action's states, where the group
// stands against Ironic's limit, ordered by action and group; nil when the
// release has no limits (before 21.1).
func (t *Topology) Concurrency() []ConcurrencyInfo {
	limits, ok := t.Rules.ConcurrencyLimits()
	if !ok {
		return nil
	}
	groups := map[string]bool{}
	for i := range t.Conductors {
		groups[t.Conductors[i].ConductorGroup] = true
	}
	total := map[rules.Action]int{}
	for k, n := range t.Actions {
		groups[k.ConductorGroup] = true
		total[k.Action] += n
	}
	var out []ConcurrencyInfo
	for _, a := range rules.Actions {
		for g := range groups {
			k := ActionKey{a, g}
			c := ConcurrencyInfo{ActionKey: k, InFlight: t.Actions[k], Counted: total[a], Limit: limits.Limit(a)}
			if limits.PerGroup {
				c.Counted = c.InFlight
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y ConcurrencyInfo) int {
		return cmp.Or(cmp.Compare(x.Action, y.Action), cmp.Compare(x.ConductorGroup, y.ConductorGroup))
	})
	return out
}
