package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// historySource adds node_history to a fixture Source.
type historySource struct {
	*fixture.Source
	read db.HistoryRead
}

func (h historySource) History(context.Context, int64, int) (db.HistoryRead, error) {
	return h.read, nil
}

// TestHistoryErrors: every conductor has a series of its ERROR events in
// the window (0 when none), and so does a name only the events carry;
// INFO events and events before the window do not count; without
// node_history the family is absent.
func TestHistoryErrors(t *testing.T) {
	snap := fixture.Golden()
	hosts := make([]string, 0, len(snap.Conductors))
	for _, c := range snap.Conductors {
		hosts = append(hosts, c.Hostname)
	}
	ev := func(id int64, host, sev string, ago time.Duration) db.HistoryEvent {
		return db.HistoryEvent{ID: id, NodeID: 1, Conductor: host, Severity: sev, EventType: "provisioning", CreatedAt: testNow.Add(-ago)}
	}
	src := historySource{Source: fixture.NewSource(snap), read: db.HistoryRead{Present: true, Events: []db.HistoryEvent{
		ev(1, hosts[0], "ERROR", 2*time.Hour), ev(2, hosts[0], "ERROR", time.Minute), ev(3, hosts[0], "ERROR", time.Second),
		ev(4, hosts[0], "INFO", time.Second), ev(5, "old-host", "ERROR", time.Minute),
	}}}
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, Settings: testSettings, HistoryWindow: time.Hour,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	body := scrapeText(t, metricsHandler(cache, ExporterOptions{NodeInfo: true}))
	want := map[string]string{hosts[0]: "2", "old-host": "1"}
	for _, h := range hosts[1:] {
		want[h] = "0"
	}
	for h, v := range want {
		line := `ironic_conductor_history_errors{hostname="` + h + `"} ` + v + "\n"
		if !strings.Contains(body, line) {
			t.Errorf("scrape lacks %q", line)
		}
	}
	if n := strings.Count(body, "ironic_conductor_history_errors{"); n != len(want) {
		t.Errorf("%d series, want %d", n, len(want))
	}

	src.read = db.HistoryRead{}
	cache, err = topology.NewCache(topology.CacheConfig{Source: src, Settings: testSettings, HistoryWindow: time.Hour,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if body := scrapeText(t, metricsHandler(cache, ExporterOptions{})); strings.Contains(body, "ironic_conductor_history_errors") {
		t.Error("no node_history, but the family is exported")
	}
}
