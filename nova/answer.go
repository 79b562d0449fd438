package nova

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// CellAnswer is what one cell's nova-computes answer now.
type CellAnswer struct {
	// Name and UUID are the cell's.
	Name, UUID string
	// Computes are the cell's ironic nova-computes (DefaultComputes: the
	// live nova-compute services with an ironic compute node, disabled
	// ones too, then those asked for that have a live service row), with
	// their state.
	Computes []ComputeState
	// Views are the views of the computes asked for, in their order; the
	// view of a compute that is down holds its instances' nodes alone (no
	// ring).
	Views []View
	// Warnings are about services.version values of no known release, and
	// (from the reader) values their columns cannot hold.
	Warnings []string
	// RowWarnings count what Warnings tell, by table and reason.
	RowWarnings []RowWarning
}

// RowWarning counts the values of one table a cell's read kept with a
// warning, for one reason: bounded labels, as db.WarningCount for Ironic's
// rows, so that a row Nova's schema does not expect is seen on a dashboard
// and not only in the log.
type RowWarning struct {
	// Table is services or compute_nodes.
	Table string
	// Reason is ReasonBadValue or ReasonUnknownVersion.
	Reason string
	// Rows is the number of values (a row with two odd columns counts two).
	Rows int
}

// The reasons of RowWarning.
const (
	// ReasonBadValue: a value its column's type cannot hold (SQLite keeps
	// any value in any column), read as NULL.
	ReasonBadValue = "bad_value"
	// ReasonUnknownVersion: a nova-compute's services.version of no
	// release the rules know (rules.NovaRulesRelease).
	ReasonUnknownVersion = "unknown_version"
)

// ComputeState is one ironic nova-compute's service row, judged.
type ComputeState struct {
	Host string
	// Version is services.version, and Release the Nova release whose
	// rules the compute follows (rules.NovaRulesRelease).
	Version int
	Release rules.Release
	// Up is Nova's servicegroup answer (rules.NovaRules.ServiceIsUp).
	Up bool
	// UpKnown: the database says whether it is up (servicegroup_driver
	// db, or forced down); else Up is assumed (rules.NovaSettings.
	// LivenessKnown).
	UpKnown    bool
	Disabled   bool
	ForcedDown bool
	// Heartbeat is last_seen_up, or created_at for a service that never
	// reported (what is_up compares); zero when both are NULL.
	Heartbeat time.Time
	// RingCandidate: the service is among the ring candidates of every
	// compute (RingCandidates: enabled); with Up, a member of the rings of
	// computes whose peers allow it.
	RingCandidate bool
}

// RingMember reports whether the compute is in the other computes' rings:
// a ring candidate that is up (peer_list may still leave it out of some).
func (c ComputeState) RingMember() bool { return c.RingCandidate && c.Up }

// AnswerInput is what a cell's answer depends on besides its rows.
type AnswerInput struct {
	// Now is the time the computes ask at.
	Now time.Time
	// Backend is the cell database's, IronicBackend Ironic's.
	Backend, IronicBackend rules.Backend
	// Settings are [DEFAULT] service_down_time and report_interval.
	Settings rules.NovaSettings
	Cell     Cell
	Nodes    Nodes
	// Computes are those whose views to compute; nil: DefaultComputes.
	Computes []Compute
}

// Answer computes a cell's answer: each compute's view with the rules of
// its own release (from its services.version: during an upgrade computes
// of two releases run side by side). A compute with no service row takes
// the newest release among the cell's nova-compute rows.
func Answer(in AnswerInput) CellAnswer {
	a, j := judge(in)
	a.Views = views(in, a, j)
	return a
}

// Judge is Answer without the views: the computes' states and the
// warnings, for a cell whose views cannot have changed (the same rows,
// nodes and states of the computes).
func Judge(in AnswerInput) CellAnswer {
	a, _ := judge(in)
	return a
}

// judgement is what judge learnt that the views need.
type judgement struct {
	release  map[string]rules.Release // host -> its release
	newest   rules.Release
	computes []Compute // those whose views to compute
}

func judge(in AnswerInput) (CellAnswer, judgement) {
	a := CellAnswer{Name: in.Cell.Name, UUID: in.Cell.UUID}
	isCompute := func(s Service) bool {
		return !s.Deleted && rules.NewNova(rules.Release{}, in.Backend, in.Settings).SQLEqual(s.Binary, "nova-compute")
	}
	release := map[string]rules.Release{} // host -> its release
	var newest rules.Release
	warned, unknown := map[int]bool{}, 0
	for _, s := range in.Cell.Services {
		if !isCompute(s) {
			continue
		}
		rel, warning := rules.NovaRulesRelease(s.Version)
		if warning != "" {
			unknown++
		}
		if warning != "" && !warned[s.Version] {
			warned[s.Version] = true
			a.Warnings = append(a.Warnings, warning)
		}
		if _, ok := release[s.Host]; !ok {
			release[s.Host] = rel
		}
		if newest.Before(rel) {
			newest = rel
		}
	}
	if unknown > 0 {
		a.RowWarnings = append(a.RowWarnings, RowWarning{Table: "services", Reason: ReasonUnknownVersion, Rows: unknown})
	}
	rulesOf := func(rel rules.Release) rules.NovaRules { return rules.NewNova(rel, in.Backend, in.Settings) }
	defaults := DefaultComputes(rulesOf(newest), in.Cell)
	computes := in.Computes
	if computes == nil {
		computes = defaults
	}
	candidates := map[int64]bool{}
	for _, s := range RingCandidates(rulesOf(newest), in.Cell) {
		candidates[s.ID] = true
	}
	// Every ironic compute, and every compute asked for that has a
	// service row: one whose records all moved to others while it was down
	// is no longer joined to an ironic compute node, yet it is the one to
	// watch.
	judged := slices.Clone(defaults)
	for _, c := range computes {
		if !slices.ContainsFunc(judged, func(j Compute) bool { return j.Host == c.Host }) {
			judged = append(judged, Compute{Host: c.Host})
		}
	}
	for _, c := range judged {
		for _, s := range in.Cell.Services {
			if !isCompute(s) || s.Host != c.Host {
				continue
			}
			r := rulesOf(release[s.Host])
			a.Computes = append(a.Computes, ComputeState{Host: s.Host, Version: s.Version, Release: release[s.Host],
				Up: r.ServiceIsUp(in.Now, s.LastSeenUp, s.CreatedAt, s.ForcedDown), UpKnown: in.Settings.LivenessKnown() || s.ForcedDown,
				Disabled:   s.Disabled,
				ForcedDown: s.ForcedDown, Heartbeat: rules.ServiceHeartbeat(s.LastSeenUp, s.CreatedAt), RingCandidate: candidates[s.ID]})
			break
		}
	}
	return a, judgement{release: release, newest: newest, computes: computes}
}

// views are the views of j.computes, in their order.
func views(in AnswerInput, a CellAnswer, j judgement) []View {
	rulesOf := func(rel rules.Release) rules.NovaRules { return rules.NewNova(rel, in.Backend, in.Settings) }
	release, newest, computes := j.release, j.newest, j.computes
	// One Views call per release and state, its results put back in the
	// computes' order. A compute that is down is viewed by instance alone:
	// its ring view is one it may no longer act on, and when every compute
	// is down (nova-conductor stopped, say) each one's ring would hold only
	// itself and claim every node, computes times over (100 computes at
	// 100k nodes: 2.8M claims, 3 s a refresh, as many series).
	type group struct {
		rel  rules.Release
		down bool
	}
	up := map[string]bool{}
	for _, cs := range a.Computes {
		up[cs.Host] = cs.Up
	}
	groups := map[group][]int{}
	for i, c := range computes {
		rel, ok := release[c.Host]
		if !ok {
			rel = newest
		}
		k := group{rel, !up[c.Host]}
		groups[k] = append(groups[k], i)
	}
	out := make([]View, len(computes))
	keys := slices.Collect(maps.Keys(groups))
	slices.SortFunc(keys, func(x, y group) int { return cmp.Or(x.rel.Compare(y.rel), rules.CompareBool(x.down, y.down)) })
	for _, k := range keys {
		idx := groups[k]
		members := make([]Compute, len(idx))
		for j, i := range idx {
			members[j] = computes[i]
		}
		vs := Views(Input{Now: in.Now, Rules: rulesOf(k.rel), IronicBackend: in.IronicBackend, Cell: in.Cell,
			Nodes: in.Nodes, Computes: members, InstanceOnly: k.down})
		for j, i := range idx {
			out[i] = vs[j]
		}
	}
	return out
}
