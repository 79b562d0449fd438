package nova

import (
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
	// Views are the views of the computes asked for, in their order.
	Views []View
	// Warnings are about services.version values of no known release.
	Warnings []string
}

// ComputeState is one ironic nova-compute's service row, judged.
type ComputeState struct {
	Host string
	// Version is services.version, and Release the Nova release whose
	// rules the compute follows (rules.NovaRulesRelease).
	Version int
	Release rules.Release
	// Up is Nova's servicegroup answer (rules.NovaRules.ServiceIsUp).
	Up         bool
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

// AnswerInput is what a cell's answer depends on besides its rows.
type AnswerInput struct {
	// Now is the time the computes ask at.
	Now time.Time
	// Backend is the cell database's, IronicBackend Ironic's.
	Backend, IronicBackend rules.Backend
	// Settings are [DEFAULT] service_down_time and report_interval.
	Settings rules.NovaSettings
	Cell     Cell
	Nodes    []IronicNode
	// Computes are those whose views to compute; nil: DefaultComputes.
	Computes []Compute
}

// Answer computes a cell's answer: each compute's view with the rules of
// its own release (from its services.version: during an upgrade computes
// of two releases run side by side). A compute with no service row takes
// the newest release among the cell's nova-compute rows.
func Answer(in AnswerInput) CellAnswer {
	a := CellAnswer{Name: in.Cell.Name, UUID: in.Cell.UUID}
	isCompute := func(s Service) bool {
		return !s.Deleted && rules.NewNova(rules.Release{}, in.Backend, in.Settings).SQLEqual(s.Binary, "nova-compute")
	}
	release := map[string]rules.Release{} // host -> its release
	var newest rules.Release
	warned := map[int]bool{}
	for _, s := range in.Cell.Services {
		if !isCompute(s) {
			continue
		}
		rel, warning := rules.NovaRulesRelease(s.Version)
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
	rulesOf := func(rel rules.Release) rules.NovaRules { return rules.NewNova(rel, in.Backend, in.Settings) }
	computes := in.Computes
	if computes == nil {
		computes = DefaultComputes(rulesOf(newest), in.Cell)
	}
	candidates := map[int64]bool{}
	for _, s := range RingCandidates(rulesOf(newest), in.Cell) {
		candidates[s.ID] = true
	}
	// Every ironic compute, and every compute asked for that has a
	// service row: one whose records all moved to others while it was down
	// is no longer joined to an ironic compute node, yet it is the one to
	// watch.
	judged := DefaultComputes(rulesOf(newest), in.Cell)
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
			hb := s.LastSeenUp
			if hb.IsZero() {
				hb = s.CreatedAt
			}
			a.Computes = append(a.Computes, ComputeState{Host: s.Host, Version: s.Version, Release: release[s.Host],
				Up: r.ServiceIsUp(in.Now, s.LastSeenUp, s.CreatedAt, s.ForcedDown), Disabled: s.Disabled,
				ForcedDown: s.ForcedDown, Heartbeat: hb, RingCandidate: candidates[s.ID]})
			break
		}
	}
	// One Views call per release, its results put back in the computes'
	// order.
	byRelease := map[rules.Release][]int{}
	for i, c := range computes {
		rel, ok := release[c.Host]
		if !ok {
			rel = newest
		}
		byRelease[rel] = append(byRelease[rel], i)
	}
	a.Views = make([]View, len(computes))
	rels := make([]rules.Release, 0, len(byRelease))
	for rel := range byRelease {
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, func(x, y rules.Release) int { return x.Compare(y) })
	for _, rel := range rels {
		idx := byRelease[rel]
		group := make([]Compute, len(idx))
		for j, i := range idx {
			group[j] = computes[i]
		}
		views := Views(Input{Now: in.Now, Rules: rulesOf(rel), IronicBackend: in.IronicBackend, Cell: in.Cell,
			Nodes: in.Nodes, Computes: group})
		for j, i := range idx {
			a.Views[i] = views[j]
		}
	}
	return a
}
