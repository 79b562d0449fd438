package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	fx "github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestNodesAreFrozen: the nodes a read returns (db.Node) are never written
// by what consumes them, the same process as production wires it: the
// cache and Build, /metrics (plain and gzip, twice: the kept renderings),
// the JSON API's node and conductor lists and lookups, and the status page
// with a lookup. A read shares an unchanged row's *db.Node with the read
// before, and Build reuses the results of the very same nodes: a write
// would change what earlier snapshots and topologies say.
func TestNodesAreFrozen(t *testing.T) {
	var cfg config
	var dc demoConfig
	app, _, _, _ := newApp(&cfg, &dc)
	if _, err := app.Parse([]string{"--db.dsn=sqlite:////nonexistent", "--api.listen-address=127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	snap := fx.Golden()
	before, err := json.Marshal(snap.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	cfg.source = func(topology.Source) topology.Source { return fx.NewSource(snap) }
	logger := slog.New(slog.DiscardHandler)
	settings, err := topologySettings(cfg, flagSources)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newExporter(cfg, settings, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := setupAuth(cfg.auth, nil, cfg.apiListen, 0, logger)
	if err != nil {
		t.Fatal(err)
	}
	webDoor, apiDoor := a.routes(cfg, authn, "")
	uuid := snap.Nodes[0].UUID
	for round := range 2 {
		for _, rq := range []struct {
			door       http.Handler
			path, gzip string
		}{
			{webDoor, "/metrics", ""}, {webDoor, "/metrics", "gzip"},
			{apiDoor, "/v1/nodes?detail=true", ""}, {apiDoor, "/v1/nodes/" + uuid, ""},
			{apiDoor, "/v1/conductors?detail=true", ""}, {apiDoor, "/?node=" + uuid, ""},
		} {
			r := httptest.NewRequest(http.MethodGet, rq.path, nil)
			r.Header.Set("Accept-Encoding", rq.gzip)
			r.Header.Set("Accept", "text/html")
			r.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
			w := httptest.NewRecorder()
			rq.door.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				body, _ := io.ReadAll(w.Body)
				t.Fatalf("round %d: GET %s: %d %s", round, rq.path, w.Code, body)
			}
		}
	}
	after, err := json.Marshal(snap.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("a consumer wrote the snapshot's nodes:\nbefore %s\nafter  %s", before, after)
	}
}
