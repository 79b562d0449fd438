package status

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// lookupEvents is how many of a node's node_history events the lookup shows.
const lookupEvents = 5

// eventsData is the page's node_history section: the errors each conductor
// recorded within the window (Ironic 18.2+).
type eventsData struct {
	Window  time.Duration
	Rows    []eventsRow
	Warning string
}

type eventsRow struct {
	Conductor   string
	Errors      int
	Registered  bool // a conductor of the conductors table
	LatestError time.Time
}

// eventRow is one event of a node, without its text (the page shows
// nothing free-form from the database).
type eventRow struct {
	Age                            time.Duration
	Time                           string
	Severity, EventType, Conductor string
}

// buildEvents is the section; nil when no node_history is read.
func buildEvents(t *topology.Topology) *eventsData {
	h := t.History
	if h == nil {
		return nil
	}
	d := &eventsData{Window: h.Window, Warning: h.Warning}
	for host, e := range h.ErrorsByConductor() {
		_, known := t.Conductor(host)
		d.Rows = append(d.Rows, eventsRow{Conductor: host, Errors: e.N, Registered: known, LatestError: e.Latest})
	}
	slices.SortFunc(d.Rows, func(a, b eventsRow) int {
		return cmp.Or(b.Errors-a.Errors, strings.Compare(a.Conductor, b.Conductor))
	})
	return d
}

// nodeEvents are the node's last events of the window, newest first.
func nodeEvents(t *topology.Topology, nodeID int64) []eventRow {
	if t.History == nil {
		return nil
	}
	var out []eventRow
	for _, e := range t.History.ForNode(nodeID, lookupEvents) {
		out = append(out, eventRow{Age: t.Now.Sub(e.CreatedAt).Round(time.Second), Time: e.CreatedAt.Format(time.RFC3339),
			Severity: e.Severity, EventType: e.EventType, Conductor: e.Conductor})
	}
	return out
}
