package topology

import (
	"context"
	"slices"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// HistorySource is a Source that also reads node_history (*db.DB does):
// the cache then keeps a window of its events (CacheConfig.HistoryWindow).
type HistorySource interface {
	History(ctx context.Context, after int64, backlog int) (db.HistoryRead, error)
}

// HistoryBacklog is how many events before the newest one a first read
// takes: enough to fill a window of a busy fleet at start, bounded.
const HistoryBacklog = 20000

// History is the window of node_history's events the cache holds: those
// recorded within Window before the refresh that read them last. It is
// never modified once a topology carries it.
type History struct {
	// Window is how far back Events go.
	Window time.Duration
	// Events are the events of the window, in id order.
	Events []db.HistoryEvent
	// Cursor is the highest id read; the next read starts after it.
	Cursor int64
	// Warning says why the table exists but cannot be read ("" when fine).
	Warning string
}

// ConductorErrors are the ERROR events one conductor recorded in the
// window: how many, and when the latest was.
type ConductorErrors struct {
	N      int
	Latest time.Time
}

// ErrorsByConductor counts the window's ERROR events
// (rules.HistorySeverityError) by the conductor that recorded them.
func (h *History) ErrorsByConductor() map[string]ConductorErrors {
	out := map[string]ConductorErrors{}
	for i := range h.Events {
		if e := &h.Events[i]; e.Severity == rules.HistorySeverityError {
			c := out[e.Conductor]
			c.N++
			if e.CreatedAt.After(c.Latest) {
				c.Latest = e.CreatedAt
			}
			out[e.Conductor] = c
		}
	}
	return out
}

// ForNode is the node's last n events of the window, newest first.
func (h *History) ForNode(nodeID int64, n int) []db.HistoryEvent {
	var out []db.HistoryEvent
	for i := len(h.Events) - 1; i >= 0 && len(out) < n; i-- {
		if h.Events[i].NodeID == nodeID {
			out = append(out, h.Events[i])
		}
	}
	return out
}

// nextHistory reads the events after prev's cursor and returns the window
// ending at now: prev's events still within it, then the new ones. A read
// error returns prev with it (its events age out at the next good read).
// nil when the schema has no node_history (before Ironic 18.2).
func nextHistory(ctx context.Context, src HistorySource, prev *History, window time.Duration, now time.Time) (*History, error) {
	var after int64
	if prev != nil {
		after = prev.Cursor
	}
	r, err := src.History(ctx, after, HistoryBacklog)
	if err != nil {
		return prev, err
	}
	if !r.Present {
		return nil, nil
	}
	from := now.Add(-window)
	h := &History{Window: window, Cursor: after, Warning: r.Warning}
	if prev != nil {
		// by time, not by position: conductors' clocks differ, so ids
		// and times need not be in the same order
		h.Events = slices.DeleteFunc(slices.Clone(prev.Events), func(e db.HistoryEvent) bool {
			return e.CreatedAt.Before(from)
		})
	}
	for _, e := range r.Events {
		h.Cursor = max(h.Cursor, e.ID)
		if !e.CreatedAt.Before(from) {
			h.Events = append(h.Events, e)
		}
	}
	return h, nil
}
