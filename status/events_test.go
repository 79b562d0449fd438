package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

var eventSettings = topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}

// historySource adds node_history's events to a fixture Source.
type historySource struct {
	*fixture.Source
	events []db.HistoryEvent
}

func (h historySource) History(context.Context, int64, int) (db.HistoryRead, error) {
	return db.HistoryRead{Present: true, Events: h.events}, nil
}

// TestEvents: the page counts each conductor's node_history errors of the
// window, and a node's lookup shows its last events, without their text.
func TestEvents(t *testing.T) {
	now := time.Now().UTC()
	src := historySource{Source: fixture.NewSource(degradedSnapshot()), events: []db.HistoryEvent{
		{ID: 1, NodeID: 3, Conductor: "cond-c", Severity: "ERROR", EventType: "provisioning", CreatedAt: now.Add(-2 * time.Hour)},
		{ID: 2, NodeID: 3, Conductor: "cond-c", Severity: "ERROR", EventType: "cleaning", CreatedAt: now.Add(-10 * time.Minute)},
		{ID: 3, NodeID: 3, Conductor: "cond-c", Severity: "INFO", EventType: "monitoring", CreatedAt: now.Add(-5 * time.Minute)},
		{ID: 4, NodeID: 4, Conductor: "gone-host", Severity: "ERROR", EventType: "<b>x</b>", CreatedAt: now.Add(-time.Minute)},
	}}
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, Settings: eventSettings, HistoryWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(cache, Options{Version: "1.2.3"})
	_, body := get(t, h, "/")
	for _, want := range []string{
		`<h2 id="events-h">Errors conductors recorded</h2>`,
		`over the last 1h0m0s`,
		`<tr><td><a href="/?conductor=cond-c">cond-c</a></td><td class="num dead">1</td>`,
		`<tr><td>gone-host (not registered)</td><td class="num dead">1</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	_, body = get(t, h, "/?node=web-2")
	i := strings.Index(body, `<dd id="lookup-events">`)
	if i < 0 {
		t.Fatal("lookup has no events")
	}
	events := body[i : i+strings.Index(body[i:], "</dd>")]
	if !strings.Contains(events, `<span>INFO</span> monitoring`) || !strings.Contains(events, `<span class="dead">ERROR</span> cleaning`) ||
		strings.Index(events, "monitoring") > strings.Index(events, "cleaning") || strings.Contains(events, "provisioning") {
		t.Errorf("web-2's events (newest first, within the window): %s", events)
	}
	_, body = get(t, h, "/?node=web-3")
	if strings.Contains(body, "<b>x</b>") || !strings.Contains(body, "&lt;b&gt;x&lt;/b&gt;") {
		t.Error("an event type is not escaped")
	}

	// Without node_history: no section, no events in the lookup.
	cache, err = topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(degradedSnapshot()), Settings: eventSettings,
		HistoryWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, body = get(t, NewHandler(cache, Options{Version: "1.2.3"}), "/?node=web-2")
	if strings.Contains(body, `id="events-h"`) || strings.Contains(body, `id="lookup-events"`) {
		t.Error("no node_history, but the page shows events")
	}
}

// TestRowDeletionOnSQLite: where Ironic runs on SQLite (32.0+), the page
// says that its cleanup deletes an offline conductor's row at its next run;
// an online one it keeps.
func TestRowDeletionOnSQLite(t *testing.T) {
	snap := degradedSnapshot()
	snap.Backend = rules.SQLite
	snap.Conductors = append(snap.Conductors, db.Conductor{ID: 4, Hostname: "cond-gone", Online: false,
		UpdatedAt: time.Now().UTC().Add(-time.Hour), HardwareTypes: []string{"ipmi"}})
	s := eventSettings
	s.Release = rules.MustRelease("39.0")
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, NewHandler(cache, Options{Version: "1.2.3"}), "/")
	if n := strings.Count(body, `<small class="row-deletion">Ironic deletes this row at its next cleanup (every 24h0m)</small>`); n != 1 {
		t.Errorf("%d conductors said deleted at the next cleanup, want 1 (cond-gone)", n)
	}
	if strings.Contains(body, "never deletes this row") {
		t.Error("on SQLite the page says the cleanup fails")
	}
}
