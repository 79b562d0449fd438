package status

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// History records each conductor's state changes as the exporter saw them
// since it started, bounded in hosts and in changes per host. Feed it every
// refresh (Observe as, or from, topology.CacheConfig.OnRefresh); the
// topologies stay immutable.
type History struct {
	mu        sync.Mutex
	maxHosts  int
	maxEvents int
	started   time.Time
	hosts     map[string]*hostHistory
}

// Event is one observed state of a conductor, from At on.
type Event struct {
	// At is when the refresh that saw the state ran.
	At time.Time
	// State is the conductor's state then; "" when its row disappeared.
	State rules.State
}

type hostHistory struct {
	events   []Event // oldest first, at most maxEvents
	lastSeen time.Time
	dropped  int // older events forgotten
}

// NewHistory returns a History keeping at most maxHosts conductors (the
// longest unseen are forgotten first) and maxEvents changes per conductor.
func NewHistory(maxHosts, maxEvents int) *History {
	return &History{maxHosts: max(maxHosts, 1), maxEvents: max(maxEvents, 2), hosts: map[string]*hostHistory{}}
}

// Observe records the states of a refresh's topology; failed refreshes
// change nothing.
func (h *History) Observe(r topology.Refresh) {
	t := r.Topology
	if t == nil {
		return
	}
	at := t.Now
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started.IsZero() {
		h.started = at
	}
	seen := make(map[string]bool, len(t.Conductors))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		seen[c.Hostname] = true
		hh := h.hosts[c.Hostname]
		if hh == nil {
			hh = &hostHistory{}
			h.hosts[c.Hostname] = hh
		}
		hh.lastSeen = at
		if n := len(hh.events); n == 0 || hh.events[n-1].State != c.State {
			hh.add(Event{At: at, State: c.State}, h.maxEvents)
		}
	}
	for host, hh := range h.hosts {
		if !seen[host] && len(hh.events) > 0 && hh.events[len(hh.events)-1].State != "" {
			hh.add(Event{At: at}, h.maxEvents)
		}
	}
	for len(h.hosts) > h.maxHosts { // forget the longest unseen
		delete(h.hosts, slices.MinFunc(slices.Collect(maps.Keys(h.hosts)), func(a, b string) int {
			return h.hosts[a].lastSeen.Compare(h.hosts[b].lastSeen)
		}))
	}
}

func (hh *hostHistory) add(e Event, limit int) {
	if len(hh.events) == limit {
		hh.events = append(hh.events[:0], hh.events[1:]...)
		hh.dropped++
	}
	hh.events = append(hh.events, e)
}

// Events returns a conductor's recorded states, oldest first, how many
// older ones were forgotten, and since when the history runs.
func (h *History) Events(host string) (events []Event, dropped int, since time.Time) {
	if h == nil {
		return nil, 0, time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if hh := h.hosts[host]; hh != nil {
		events = append(events, hh.events...)
		dropped = hh.dropped
	}
	return events, dropped, h.started
}
