package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// novaData is the page's Nova side (Options.Nova set).
type novaData struct {
	// APIDown: the last read of nova_api failed; Stale lists the cells
	// whose last read failed.
	APIDown bool
	Stale   []string
	NoRead  bool // nothing read yet
	Assumed bool // no computes file
	// Servicegroup is Nova's servicegroup_driver when it keeps the
	// computes' liveness out of the database ("" when it is "db").
	Servicegroup string
	ReadAge      time.Duration
	Computes     []novaComputeRow
	Problems     []novaProblemRow
}

type novaComputeRow struct {
	Cell, Host               string
	Up, Disabled, ForcedDown bool
	UpKnown                  bool // else Up is assumed: liveness unknown
	RingMember               bool
	HeartbeatAge             time.Duration
	NoHeartbeat              bool
	HeartbeatNotKept         bool // servicegroup_driver is not db
	ByInstance, ByRing       int
	Failing                  bool // InvalidPeerList
}

type novaProblemRow struct {
	Reason, Text string
	Count        int
}

// novaProblemTexts say each problem reason in words.
var novaProblemTexts = map[string]string{
	nova.ProblemUnclaimed:           "Ironic nodes no nova-compute manages",
	nova.ProblemClaimedTwice:        "nodes two nova-computes manage (their views disagree)",
	nova.ProblemComputeDown:         "nodes whose nova-compute is down or disabled",
	nova.ProblemNoComputeNode:       "available nodes with no compute record: Nova cannot schedule to them",
	nova.ProblemRecordHostDiffers:   "compute records naming another host than the ring's owner (rebalance pending or stuck)",
	nova.ProblemInstanceMismatch:    "nodes whose instance differs between Ironic and Nova",
	nova.ProblemInstanceComputeDown: "instances on a nova-compute that is down",
	nova.ProblemOrphanRecord:        "compute records of nodes gone from Ironic",
}

// buildNova is the Nova side of the page from s at now.
func buildNova(s *novacache.State, now time.Time) *novaData {
	d := &novaData{APIDown: s.Err != nil, NoRead: s.ReadAt.IsZero(), Assumed: s.Assumed}
	if !(rules.NovaSettings{ServicegroupDriver: s.ServicegroupDriver}).LivenessKnown() {
		d.Servicegroup = s.ServicegroupDriver
	}
	if d.NoRead {
		return d
	}
	d.ReadAge = now.Sub(s.ReadAt).Round(time.Second)
	for _, c := range s.Cells {
		if c.Err != nil {
			d.Stale = append(d.Stale, c.Name)
		}
		views := map[string]nova.View{}
		for _, v := range c.Views {
			views[v.Host] = v
		}
		for _, cs := range c.Computes {
			v := views[cs.Host]
			row := novaComputeRow{Cell: c.Name, Host: cs.Host, Up: cs.Up, UpKnown: cs.UpKnown, Disabled: cs.Disabled, ForcedDown: cs.ForcedDown,
				RingMember: cs.RingMember(), NoHeartbeat: cs.Heartbeat.IsZero(), HeartbeatNotKept: d.Servicegroup != "", Failing: v.Err != nil}
			row.ByInstance, row.ByRing = v.ByInstance, v.ByRing
			if !row.NoHeartbeat {
				row.HeartbeatAge = now.Sub(cs.Heartbeat).Round(time.Second)
			}
			d.Computes = append(d.Computes, row)
		}
	}
	// Trouble first: down, then disabled, then the rest.
	rank := func(r novaComputeRow) int {
		switch {
		case !r.Up:
			return 0
		case r.Disabled || r.Failing:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(d.Computes, func(a, b novaComputeRow) int {
		return cmp.Or(rank(a)-rank(b), strings.Compare(a.Cell, b.Cell), strings.Compare(a.Host, b.Host))
	})
	for _, r := range nova.ProblemReasons {
		if n := s.Fleet.Problems[r]; n > 0 {
			d.Problems = append(d.Problems, novaProblemRow{Reason: r, Text: novaProblemTexts[r], Count: n})
		}
	}
	return d
}

// summarizeNova adds the Nova side's problems to the summary.
func summarizeNova(s *summary, d *novaData) {
	add := func(level, format string, args ...any) {
		s.Problems = append(s.Problems, problem{Level: level, Text: fmt.Sprintf(format, args...), Anchor: "nova-h"})
	}
	switch {
	case d.NoRead:
		add("warn", "Nova: its databases have not been read yet.")
		return
	case d.APIDown:
		add("warn", "Nova: the last read of nova_api failed; the Nova side is %s old.", humanAge(d.ReadAge))
	case len(d.Stale) > 0:
		add("warn", "Nova: the last read of cell(s) %s failed; their answers are stale.", strings.Join(d.Stale, ", "))
	}
	down := 0
	for _, c := range d.Computes {
		if !c.Up && c.ByInstance > 0 {
			down++
		}
	}
	if down > 0 {
		add("bad", "%d nova-compute(s) for Ironic down with instances on their nodes.", down)
	}
	for _, p := range d.Problems {
		level := "warn"
		if p.Reason == nova.ProblemUnclaimed || p.Reason == nova.ProblemNoComputeNode {
			level = "bad"
		}
		add(level, "Nova: %d %s.", p.Count, p.Text)
	}
}

// nodeOfInstance finds the node whose instance_uuid is ident.
func nodeOfInstance(t *topology.Topology, ident string) (*topology.NodeInfo, bool) {
	for i := range t.Nodes {
		if n := &t.Nodes[i]; n.InstanceUUID != nil && strings.EqualFold(*n.InstanceUUID, ident) {
			return n, true
		}
	}
	return nil, false
}
