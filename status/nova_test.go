package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

type novaReader struct{ snap *novadb.Snapshot }

func (r novaReader) Read(context.Context, []string, *novadb.Known) (*novadb.Snapshot, error) {
	return r.snap, nil
}

// TestNovaOnCallPath: with Nova, the lookup takes an instance UUID and
// walks instance -> node -> conductor (alive?) -> nova-compute (up?) ->
// boot files; the page lists the computes, down first, and the summary
// names the down compute that strands instances and the Nova problems.
func TestNovaOnCallPath(t *testing.T) {
	snap := degradedSnapshot()
	inst := "99999999-9999-4999-8999-999999999999"
	snap.Nodes[0].InstanceUUID = &inst
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap),
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}})
	if err != nil {
		t.Fatal(err)
	}
	cache.Get(context.Background())
	now := time.Now().UTC()
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services: []nova.Service{
			{ID: 1, Host: "ironic-up", Binary: "nova-compute", LastSeenUp: now, Version: 68},
			{ID: 2, Host: "ironic-down", Binary: "nova-compute", LastSeenUp: now.Add(-time.Hour), Version: 68},
		},
		ComputeNodes: []nova.ComputeNode{
			{UUID: nova.KeyOf(snap.Nodes[0].UUID), Host: "ironic-down", HypervisorHostname: nova.KeyOf(snap.Nodes[0].UUID)},
			{UUID: nova.KeyOf("gone"), Host: "ironic-up", HypervisorHostname: nova.KeyOf("gone")},
		},
		Instances: []nova.Instance{{UUID: nova.KeyOf(inst), Host: "ironic-down", Node: nova.KeyOf(snap.Nodes[0].UUID)}}}
	nc := novacache.New(novacache.Config{Reader: novaReader{&novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}},
		Ironic: func(context.Context) *topology.Topology { return cache.Current().Topology }})
	nc.Refresh(context.Background())
	h := NewHandler(cache, Options{Version: "1.2.3", Nova: nc.Current})

	_, body := get(t, h, "/?node="+strings.ToUpper(inst))
	lookup := between(body, `id="lookup-result"`, "</dl>")
	for _, want := range []string{`id="lookup-instance">` + inst, `web-1`, `id="lookup-conductor">`,
		`<strong>ironic-down</strong> (cell cell1, by instance) <span class="state dead">down</span>`, `id="lookup-affinity"`} {
		if !strings.Contains(lookup, want) {
			t.Errorf("lookup by instance lacks %q:\n%s", want, lookup)
		}
	}
	_, body = get(t, h, "/")
	computes := between(body, `id="nova-computes"`, "</table>")
	if i, j := strings.Index(computes, "ironic-down"), strings.Index(computes, "ironic-up"); i < 0 || j < 0 || i > j {
		t.Errorf("computes table, down first:\n%s", computes)
	}
	summary := between(body, `id="summary"`, "</div>")
	for _, want := range []string{"1 nova-compute(s) for Ironic down with instances on their nodes.",
		"Nova: 1 compute records of nodes gone from Ironic."} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Index(summary, "nova-compute(s) for Ironic down") > strings.Index(summary, "draining") && strings.Contains(summary, "draining") {
		t.Errorf("a bad Nova problem after a warning:\n%s", summary)
	}

	// A caller whom Nova's os-hypervisors policy refuses sees no compute
	// host, in the lookup, the table or the summary, and is told why.
	hidden := NewHandler(cache, Options{Version: "1.2.3", Nova: nc.Current, NovaAllowed: func(*http.Request) bool { return false }})
	for _, path := range []string{"/", "/?node=" + snap.Nodes[0].UUID} {
		_, body = get(t, hidden, path)
		if strings.Contains(body, "ironic-down") || strings.Contains(body, "ironic-up") || strings.Contains(body, `id="nova-computes"`) ||
			!strings.Contains(body, `id="nova-hidden"`) || !strings.Contains(body, "os_compute_api:os-hypervisors:show") {
			t.Errorf("%s for a caller the hypervisor policy refuses shows compute hosts or does not say why:\n%s", path, body)
		}
	}
	allowed := NewHandler(cache, Options{Version: "1.2.3", Nova: nc.Current, NovaAllowed: func(*http.Request) bool { return true }})
	if _, body = get(t, allowed, "/"); !strings.Contains(body, "ironic-down") || strings.Contains(body, `id="nova-hidden"`) {
		t.Errorf("an admin's page lacks the computes")
	}

	// Without Nova: no instance lookup, no Nova section.
	_, body = get(t, newHandler(t, fixture.NewSource(snap)), "/?node="+inst)
	if strings.Contains(body, "nova-h") || !strings.Contains(body, "No node <code>") {
		t.Errorf("without Nova the page shows Nova or finds the instance")
	}
}

// TestNovaLivenessUnknownPage: with servicegroup_driver mc the page says
// the computes' liveness is unknown, and why, instead of down, and the
// node lookup says "unknown" instead of "up".
func TestNovaLivenessUnknownPage(t *testing.T) {
	snap := degradedSnapshot()
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap),
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}})
	if err != nil {
		t.Fatal(err)
	}
	cache.Get(context.Background())
	now := time.Now().UTC()
	cell := nova.Cell{Name: "cell1", UUID: "c1", Services: []nova.Service{
		{ID: 1, Host: "ironic-stale", Binary: "nova-compute", LastSeenUp: now.Add(-time.Hour), Version: 68}}}
	node := cache.Current().Topology.Nodes[0].UUID
	cell.ComputeNodes = []nova.ComputeNode{{UUID: nova.KeyOf(node), Host: "ironic-stale", HypervisorHostname: nova.KeyOf(node)}}
	settings := rules.DefaultNovaSettings()
	settings.ServicegroupDriver = "mc"
	nc := novacache.New(novacache.Config{Reader: novaReader{&novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}},
		Settings: settings, Ironic: func(context.Context) *topology.Topology { return cache.Current().Topology },
		Computes: &nova.ComputesFile{Computes: []nova.FileCompute{{Host: "ironic-stale"}}}})
	nc.Refresh(context.Background())
	_, body := get(t, NewHandler(cache, Options{Version: "1.2.3", Nova: nc.Current}), "/")
	computes := between(body, `id="nova-computes"`, "</table>")
	if !strings.Contains(body, `id="nova-liveness-unknown"`) || !strings.Contains(body, "servicegroup_driver = mc") ||
		!strings.Contains(computes, `<td class="state unknown">unknown`) || strings.Contains(computes, ">down") ||
		!strings.Contains(computes, "not in the database") {
		t.Errorf("liveness unknown not said:\n%s", between(body, `id="nova-h"`, "</table>"))
	}
	if strings.Contains(between(body, `id="summary"`, "</div>"), "down with instances") {
		t.Error("the summary calls a compute of unknown liveness down")
	}
	_, body = get(t, NewHandler(cache, Options{Version: "1.2.3", Nova: nc.Current}), "/?node="+node)
	if lookup := between(body, `id="lookup-nova"`, "</dd>"); !strings.Contains(lookup, `<strong>ironic-stale</strong> (cell cell1, by ring) <span class="state unknown">unknown</span>`) {
		t.Errorf("the lookup of a node of a compute of unknown liveness:\n%s", lookup)
	}
}
