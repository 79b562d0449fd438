package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestNovaPiecesArePromhttp: the Nova families the text exposition splices
// (plain and gzip) are byte for byte what client_golang writes for the
// same collector.
func TestNovaPiecesArePromhttp(t *testing.T) {
	c, _ := novaBenchFleet(nil, 2000, 7)
	c.Refresh(context.Background())
	nc := NewNovaCollector(c, ExporterOptions{NodeInfo: true})
	reg := prometheus.NewRegistry()
	reg.MustRegister(nc)
	for round := range 2 {
		if round == 1 {
			// A refresh that keeps the views: the node piece is kept, the
			// others rendered again; the whole still client_golang's.
			node := func() *exposition.Piece {
				for _, p := range nc.Pieces(context.Background()) {
					if p.Name == nodeNovaComputeFamily.Name {
						return p
					}
				}
				return nil
			}
			before := node()
			c.Refresh(context.Background())
			if got := node(); got == nil || got != before {
				t.Error("the node family was rendered again over the same claims")
			}
		}
		comparePieces(t, reg, nc)
	}
}

// TestNovaWithoutNodeInfo: --no-collector.node-info drops the Nova node
// family too, from both renderings, and nothing else.
func TestNovaWithoutNodeInfo(t *testing.T) {
	c, _ := novaBenchFleet(nil, 200, 3)
	c.Refresh(context.Background())
	with := NewNovaCollector(c, ExporterOptions{NodeInfo: true})
	without := NewNovaCollector(c, ExporterOptions{})
	count := func(nc *NovaCollector) (families map[string]bool, series int) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(nc)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		families = map[string]bool{}
		for _, mf := range mfs {
			families[mf.GetName()] = true
			series += len(mf.GetMetric())
		}
		for _, p := range nc.Pieces(context.Background()) {
			if p.Name == nodeNovaComputeFamily.Name && !families[p.Name] {
				t.Errorf("Pieces has %s, Collect has not", p.Name)
			}
		}
		return families, series
	}
	fw, sw := count(with)
	fo, so := count(without)
	if !fw[nodeNovaComputeFamily.Name] || fo[nodeNovaComputeFamily.Name] {
		t.Errorf("node family with the option %v, without %v; want true, false", fw[nodeNovaComputeFamily.Name], fo[nodeNovaComputeFamily.Name])
	}
	if sw-so != 200 {
		t.Errorf("the option added %d series, want 200 (one per node)", sw-so)
	}
	for name := range fw {
		if name != nodeNovaComputeFamily.Name && !fo[name] {
			t.Errorf("%s lost without the option", name)
		}
	}
}

func comparePieces(t *testing.T, reg *prometheus.Registry, nc *NovaCollector) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	for _, gz := range []bool{false, true} {
		rec := httptest.NewRecorder()
		if err := exposition.Write(rec, format, gz, nc.Pieces(context.Background())); err != nil {
			t.Fatal(err)
		}
		got := rec.Body.Bytes()
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(want.String(), string(got)); diff != "" {
			t.Errorf("gzip %v: pieces differ from client_golang (-want +got):\n%.3000s", gz, diff)
		}
	}
	if p1, p2 := nc.Pieces(context.Background()), nc.Pieces(context.Background()); p1[0] != p2[0] {
		t.Error("the pieces of one answer are rendered again")
	}
}

// TestNovaNodeFamilyOrder: the node family, written in the registry's order
// without gathering its series, is client_golang's on fleets whose order is
// not one cell's: two cells, one of them unnamed (its name "" sorts first),
// nodes claimed in both, by instance only (the computes that are down), and
// by none.
func TestNovaNodeFamilyOrder(t *testing.T) {
	now := time.Now().UTC()
	for _, tc := range []struct {
		name string
		up   [2]bool // the computes of cell "" and of cell "b" up
		has  []string
	}{
		{"b's computes up, the unnamed cell's down", [2]bool{false, true}, []string{`cell="",`, `source="instance"`, `cell="b",`, `source="ring"`}},
		{"every compute down: nodes claimed by instance or by none", [2]bool{false, false}, []string{`cell="",`, `source="none"`, `cell="b",`}},
		{"every compute up: nodes claimed in both cells", [2]bool{true, true}, []string{`cell="",`, `cell="b",`, `source="ring"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := &topology.Topology{}
			cells := []nova.Cell{{Name: "", UUID: "c-unnamed"}, {Name: "b", UUID: "c-b"}}
			for ci := range cells {
				for k := range 3 {
					seen := now
					if !tc.up[ci] {
						seen = now.Add(-time.Hour)
					}
					cells[ci].Services = append(cells[ci].Services, nova.Service{ID: int64(k + 1),
						Host: fmt.Sprintf("c%d-%d", ci, k), Binary: "nova-compute", LastSeenUp: seen, Version: 68})
				}
			}
			for i := range 60 {
				// uuids out of the nodes' order, so that the uuid order is not theirs
				u := fmt.Sprintf("%08x-0000-4000-8000-%012x", (i*37)%60, i)
				node := &db.Node{ID: int64(i + 1), UUID: u}
				if i%3 != 0 {
					ci, inst := i%2, fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)
					node.InstanceUUID = &inst
					host := cells[ci].Services[i%3].Host
					cells[ci].Instances = append(cells[ci].Instances, nova.Instance{UUID: nova.KeyOf(inst), Host: host, Node: nova.KeyOf(u)})
				}
				topo.Nodes = append(topo.Nodes, topology.NodeInfo{Node: node})
				for ci := range cells {
					host := cells[ci].Services[i%3].Host
					cells[ci].ComputeNodes = append(cells[ci].ComputeNodes, nova.ComputeNode{UUID: nova.KeyOf(u), Host: host, HypervisorHostname: nova.KeyOf(u)})
				}
			}
			read := []novadb.CellRead{{Cell: cells[0], ReadAt: now}, {Cell: cells[1], ReadAt: now}}
			c := novacache.New(novacache.Config{Reader: benchNovaReader{snap: &novadb.Snapshot{ReadAt: now, Cells: read}},
				Ironic: func(context.Context) *topology.Topology { return topo }, Settings: rules.DefaultNovaSettings()})
			c.Refresh(context.Background())
			nc := NewNovaCollector(c, ExporterOptions{NodeInfo: true})
			reg := prometheus.NewRegistry()
			reg.MustRegister(nc)
			comparePieces(t, reg, nc)
			var text bytes.Buffer
			if err := (novaNodeStream{state: c.Current()}).WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.has {
				if !bytes.Contains(text.Bytes(), []byte(h)) {
					t.Errorf("the fleet has no series with %s", h)
				}
			}
		})
	}
}

// TestNovaLivenessUnknown: with servicegroup_driver mc the database does
// not say which computes are up: no ironic_nova_compute_up, heartbeat or
// ring member series (so no down alert) but for the compute forced down,
// and ironic_exporter_nova_compute_liveness_known 0 says why; the cell's
// credentials and its row warnings (the reader's and the judge's) are
// exported.
func TestNovaLivenessUnknown(t *testing.T) {
	now := time.Now().UTC()
	cell := nova.Cell{Name: "cell1", UUID: "c1", Services: []nova.Service{
		{ID: 1, Host: "stale", Binary: "nova-compute", LastSeenUp: now.Add(-time.Hour), Version: 68},
		{ID: 2, Host: "forced", Binary: "nova-compute", LastSeenUp: now, ForcedDown: true, Version: 68},
		{ID: 3, Host: "future", Binary: "nova-compute", LastSeenUp: now, Version: 999},
	}}
	snap := &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now,
		Credentials: novadb.CredentialsTemplate, User: "ironic_exporter_nova",
		RowWarnings: []nova.RowWarning{{Table: "compute_nodes", Reason: nova.ReasonBadValue, Rows: 2}}}}}
	settings := rules.DefaultNovaSettings()
	settings.ServicegroupDriver = "mc"
	c := novacache.New(novacache.Config{Reader: benchNovaReader{snap: snap}, Settings: settings,
		Ironic:   func(context.Context) *topology.Topology { return &topology.Topology{} },
		Computes: &nova.ComputesFile{Computes: []nova.FileCompute{{Host: "stale"}, {Host: "forced"}}}})
	c.Refresh(context.Background())
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewNovaCollector(c, ExporterOptions{NodeInfo: true}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	text := b.String()
	for _, want := range []string{
		`ironic_exporter_nova_compute_liveness_known{servicegroup_driver="mc"} 0`,
		`ironic_nova_compute_up{cell="cell1",host="forced"} 0`,
		`ironic_nova_compute_ring_member{cell="cell1",host="forced"} 0`,
		`ironic_exporter_nova_cell_connection_info{cell="cell1",credentials="template",user="ironic_exporter_nova"} 1`,
		// the row warnings: the judge's and the reader's
		`ironic_exporter_nova_snapshot_warnings{cell="cell1",reason="unknown_version",table="services"} 1`,
		`ironic_exporter_nova_snapshot_warnings{cell="cell1",reason="bad_value",table="compute_nodes"} 2`,
	} {
		if !bytes.Contains(b.Bytes(), []byte(want+"\n")) {
			t.Errorf("lacks %s\n%s", want, text)
		}
	}
	for _, not := range []string{`host="stale"} `, "ironic_nova_compute_heartbeat_timestamp_seconds{"} {
		if strings.Contains(grepFamilies(text, "ironic_nova_compute_up", "ironic_nova_compute_ring_member", "ironic_nova_compute_heartbeat"), not) {
			t.Errorf("liveness unknown, yet %q is exported\n%s", not, text)
		}
	}
}

// grepFamilies are the sample lines of text of the families named.
func grepFamilies(text string, names ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// stuckNovaReader blocks every read until release is closed, as a
// black-holed Nova database does until the refresh timeout.
type stuckNovaReader struct{ release chan struct{} }

func (r stuckNovaReader) Read(ctx context.Context, _ []string, _ *novadb.Known) (*novadb.Snapshot, error) {
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	return nil, fmt.Errorf("reading nova_api: %w", context.DeadlineExceeded)
}

// TestScrapeNotHeldByNova: a scrape with Prometheus' 10 s budget is held
// by a stuck Nova refresh at most novacache's MaxWait, not its budget: the
// Ironic families are served, Nova's as they are.
func TestScrapeNotHeldByNova(t *testing.T) {
	topo, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(benchSnapshot(10)), Settings: testSettings,
		MinInterval: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	nc := novacache.New(novacache.Config{Reader: stuckNovaReader{release}, MaxWait: 100 * time.Millisecond,
		Ironic: func(ctx context.Context) *topology.Topology { return topo.Get(ctx).Topology }})
	h := NewHandler(topo, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Nova: NewNovaCollector(nc, ExporterOptions{NodeInfo: true})})
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "10")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	if took := time.Since(start); took > 2*time.Second || !strings.Contains(rec.Body.String(), "ironic_node_conductor_info{") {
		t.Errorf("scrape took %s (Nova's MaxWait 100ms), status %d", took, rec.Code)
	}
}
