package demo

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestDemoNova drives the demo's Nova through a cycle, read as the
// exporter reads it (its nova.conf, computes file, novadb, novacache): at
// first every node is managed once and nothing is wrong; when a compute
// dies its instances are stranded and its other nodes taken by the other
// computes' rings; the resource update moves the records; when it is back
// the records disagree with the rings until the next update.
func TestDemoNova(t *testing.T) {
	x := drive(t, topology.Settings{})
	conf, err := ironicconf.LoadNova([]string{x.d.NovaConfig()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(x.d.NovaComputesFile())
	if err != nil {
		t.Fatal(err)
	}
	computes, err := nova.ParseComputes(f, x.d.NovaComputesFile())
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := novadb.Open(novadb.Config{APIConnection: conf.APIConnection.Value, Connection: conf.Connection.Value, Now: x.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	settings := rules.NovaSettings{ServiceDownTime: conf.ServiceDownTime.Value, ReportInterval: conf.ReportInterval.Value}
	var topo *topology.Topology // the exporter's, taken on the test's goroutine before each refresh
	nc := novacache.New(novacache.Config{Reader: r, Ironic: func(context.Context) *topology.Topology { return topo }, Settings: settings, Computes: computes, Now: x.clock.Now})
	advance := func(at time.Duration) {
		t.Helper()
		for x.clock.Now().Before(x.start.Add(at)) {
			x.tick()
			ctx, cancel := x.ctx()
			if err := x.sim.novaTick(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	event := func(at time.Duration, do func(context.Context, int) error) {
		t.Helper()
		advance(at)
		ctx, cancel := x.ctx()
		defer cancel()
		if err := do(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	read := func(what string) *novacache.State {
		t.Helper()
		topo = x.exporterView()
		nc.Refresh(context.Background())
		s := nc.Current()
		if s.Err != nil || len(s.Cells) != 1 || s.Cells[0].Err != nil {
			t.Fatalf("%s: reading the demo's Nova: %v %+v", what, s.Err, s.Cells)
		}
		return s
	}
	up := func(s *novacache.State) map[string]bool {
		m := map[string]bool{}
		for _, c := range s.Cells[0].Computes {
			m[c.Host] = c.Up
		}
		return m
	}
	instances := map[string]int{} // host -> nodes with its instances
	s := read("at start")
	for i := range s.Fleet.Len() {
		claims := slices.Collect(s.Fleet.Claims(i))
		if len(claims) != 1 {
			t.Fatalf("at start node %s has %d claims", s.UUID(i), len(claims))
		}
		if claims[0].Source == "instance" {
			instances[claims[0].Host]++
		}
	}
	for r, n := range s.Fleet.Problems {
		if n != 0 && r != nova.ProblemNoComputeNode { // nodes enrolled later get their record at the next update
			t.Errorf("at start: %d %s", n, r)
		}
	}
	victim := novaVictims[0]
	if instances[victim] == 0 || len(up(s)) != len(NovaComputes) {
		t.Fatalf("at start: %v instances per compute, computes %v", instances, up(s))
	}

	event(atNovaDie, x.sim.novaDie)
	advance(atNovaDie + NovaServiceDownTime + 2*NovaReportInterval)
	s = read("dead")
	if up(s)[victim] {
		t.Fatalf("%s is up after dying: %v", victim, up(s))
	}
	if got := s.Fleet.Problems[nova.ProblemInstanceComputeDown]; got != instances[victim] {
		t.Errorf("instances stranded on %s: %d, want %d", victim, got, instances[victim])
	}
	if got := s.Fleet.Problems[nova.ProblemComputeDown]; got != instances[victim] {
		t.Errorf("nodes only %s manages: %d, want its %d instance nodes (the rings took the others)", victim, got, instances[victim])
	}
	if got := s.Fleet.Problems[nova.ProblemRecordHostDiffers]; got == 0 {
		t.Error("no compute record disagrees with the rings before the resource update")
	}

	event(atNovaUpdate, x.sim.novaResourceUpdate)
	if got := read("updated").Fleet.Problems[nova.ProblemRecordHostDiffers]; got != 0 {
		t.Errorf("after the resource update %d records disagree with the rings", got)
	}

	event(atNovaBack, x.sim.novaBack)
	s = read("back")
	if !up(s)[victim] || s.Fleet.Problems[nova.ProblemRecordHostDiffers] == 0 {
		t.Errorf("back: up %v, records disagreeing %d (want some: its ring nodes are on the others)", up(s),
			s.Fleet.Problems[nova.ProblemRecordHostDiffers])
	}
	event(atNovaBackUpdate, x.sim.novaResourceUpdate)
	if got := read("back, updated").Fleet.Problems[nova.ProblemRecordHostDiffers]; got != 0 {
		t.Errorf("after the second update %d records disagree", got)
	}
}
