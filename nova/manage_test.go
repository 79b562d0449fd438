package nova

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

var now = time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)

func strp(s string) *string { return &s }

// fleet builds a cell of ironic computes, each with one compute_nodes row,
// heartbeating at now-age, and n nodes without instances.
type fleet struct {
	in    Input
	nodes Nodes // in's, set by input
}

// input is f.in over f.nodes.
func (f *fleet) input() Input {
	in := f.in
	in.Nodes = f.nodes
	return in
}

func newFleet(release rules.Release, backend rules.Backend, n int) *fleet {
	f := &fleet{in: Input{Now: now, Rules: rules.NewNova(release, backend, rules.DefaultNovaSettings()),
		IronicBackend: rules.PostgreSQL}}
	for i := range n {
		f.nodes = append(f.nodes, IronicNode{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)})
	}
	return f
}

// service adds a nova-compute service row and its ironic compute node row.
func (f *fleet) service(host string, age time.Duration, mod ...func(*Service, *ComputeNode)) {
	id := int64(len(f.in.Cell.Services) + 1)
	s := Service{ID: id, Host: host, Binary: "nova-compute", CreatedAt: now.Add(-time.Hour), LastSeenUp: now.Add(-age)}
	cn := ComputeNode{Host: host, UUID: KeyOf(fmt.Sprintf("cn-%d", id))}
	for _, m := range mod {
		m(&s, &cn)
	}
	f.in.Cell.Services = append(f.in.Cell.Services, s)
	switch cn.UUID.String() {
	case notIronicUUID:
	case softDeletedUUID:
		f.in.Cell.SoftDeletedHosts = append(f.in.Cell.SoftDeletedHosts, cn.Host)
	default:
		f.in.Cell.ComputeNodes = append(f.in.Cell.ComputeNodes, cn)
	}
}

// notIronicUUID marks a service whose compute node is of another
// hypervisor type (QEMU): one the reader does not read; softDeletedUUID
// one whose only compute node is soft-deleted (its host read apart).
const notIronicUUID, softDeletedUUID = "not-ironic", "soft-deleted"

func notIronic(_ *Service, cn *ComputeNode)   { cn.UUID = KeyOf(notIronicUUID) }
func softDeleted(_ *Service, cn *ComputeNode) { cn.UUID = KeyOf(softDeletedUUID) }

func (f *fleet) computes(cs ...Compute) *fleet { f.in.Computes = cs; return f }

// source is why v, computed over nodes, manages the node of uuid;
// rules.NovaSourceNone when it does not.
func source(v View, nodes Nodes, uuid string) rules.NovaSource {
	for _, m := range v.Nodes {
		if nodes[m.Node].UUID == uuid {
			return m.Source()
		}
	}
	return rules.NovaSourceNone
}

func (f *fleet) views(t *testing.T) map[string]View {
	t.Helper()
	out := map[string]View{}
	for _, v := range Views(f.input()) {
		out[v.Host] = v
	}
	return out
}

// want is the expected ownership: on the ring of members, the nodes
// without instance that map to host.
func (f *fleet) want(t *testing.T, members []string, host string) []string {
	t.Helper()
	r, err := ring.New(members, 5, ring.MD5)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range f.nodes {
		if h, _ := r.Get([]byte(n.UUID)); h == host && n.InstanceUUID == "" {
			out = append(out, n.UUID)
		}
	}
	slices.Sort(out)
	return out
}

func hosts(cs ...string) []Compute {
	out := make([]Compute, len(cs))
	for i, c := range cs {
		out[i] = Compute{Host: c}
	}
	return out
}

func TestRingAtServiceDownTime(t *testing.T) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 200)
	f.service("a", 0)
	f.service("b", 60*time.Second)                  // at the boundary: up
	f.service("c", 60*time.Second+time.Microsecond) // just past: down
	f.service("d", -60*time.Second)                 // a heartbeat 60s ahead (conductor's clock): up
	f.computes(hosts("a", "b", "c")...)
	v := f.views(t)
	if want := []string{"a", "b", "d"}; !slices.Equal(v["a"].Ring, want) {
		t.Errorf("a's ring %v, want %v", v["a"].Ring, want)
	}
	// c is down but always in its own ring: its view differs
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(v["c"].Ring, want) {
		t.Errorf("c's ring %v, want %v", v["c"].Ring, want)
	}
	if got, want := v["a"].Managed(f.nodes.UUID), f.want(t, []string{"a", "b", "d"}, "a"); !slices.Equal(got, want) {
		t.Errorf("a manages %d nodes, want %d", len(got), len(want))
	}
	if got, want := v["c"].Managed(f.nodes.UUID), f.want(t, []string{"a", "b", "c", "d"}, "c"); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("c manages %d nodes, want %d (>0)", len(got), len(want))
	}
	// report_interval override: service_down_time 30 <= report_interval 30 -> 75
	f.in.Rules = rules.NewNova(rules.MustRelease("31.0"), rules.PostgreSQL, rules.NovaSettings{ServiceDownTime: 30, ReportInterval: 30})
	if got := f.views(t)["a"].Ring; !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("with the 75s override a's ring is %v", got)
	}
}

func TestRingFilters(t *testing.T) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 50)
	f.service("a", 0)
	f.service("forced", 0, func(s *Service, _ *ComputeNode) { s.ForcedDown = true })
	f.service("disabled", 0, func(s *Service, _ *ComputeNode) { s.Disabled = true })
	f.service("deleted", 0, func(s *Service, _ *ComputeNode) { s.Deleted = true })
	f.service("softcn", 0, softDeleted) // only soft-deleted compute nodes: still a member
	f.service("libvirt", 0, notIronic)
	f.service("conductor", 0, func(s *Service, _ *ComputeNode) { s.Binary = "nova-conductor" })
	f.computes(hosts("a", "disabled", "forced")...)
	v := f.views(t)
	if want := []string{"a", "softcn"}; !slices.Equal(v["a"].Ring, want) {
		t.Errorf("a's ring %v, want %v", v["a"].Ring, want)
	}
	if want := []string{"a", "disabled", "softcn"}; !slices.Equal(v["disabled"].Ring, want) {
		t.Errorf("a disabled compute still adds itself: %v, want %v", v["disabled"].Ring, want)
	}
	if want := []string{"a", "forced", "softcn"}; !slices.Equal(v["forced"].Ring, want) {
		t.Errorf("forced down compute's ring %v, want %v", v["forced"].Ring, want)
	}
}

func TestHostCase(t *testing.T) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 300)
	f.service("Compute-A", 0)
	f.service("compute-b", 0)
	// a compute_nodes row whose host differs in case from its service's
	f.service("Compute-C", 0, func(_ *Service, cn *ComputeNode) { cn.Host = "compute-c" })
	f.computes(hosts("Compute-A", "compute-b")...)
	v := f.views(t)
	// PostgreSQL: the join is exact, Compute-C is no candidate
	if want := []string{"compute-a", "compute-b"}; !slices.Equal(v["Compute-A"].Ring, want) {
		t.Errorf("ring %v, want %v (lowercased)", v["Compute-A"].Ring, want)
	}
	if got, want := v["Compute-A"].Managed(f.nodes.UUID), f.want(t, []string{"compute-a", "compute-b"}, "compute-a"); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("Compute-A manages %d, want %d (>0): its ring name is lowercase", len(got), len(want))
	}
	// MySQL: the join ignores case
	f.in.Rules = rules.NewNova(rules.MustRelease("31.0"), rules.MySQL, rules.DefaultNovaSettings())
	if want := []string{"compute-a", "compute-b", "compute-c"}; !slices.Equal(f.views(t)["Compute-A"].Ring, want) {
		t.Errorf("MySQL ring %v, want %v", f.views(t)["Compute-A"].Ring, want)
	}
	// 20.0: nothing lowercased; the uppercase compute still finds itself
	f.in.Rules = rules.NewNova(rules.MustRelease("20.0"), rules.PostgreSQL, rules.DefaultNovaSettings())
	v = f.views(t)
	if want := []string{"Compute-A", "compute-b"}; !slices.Equal(v["Compute-A"].Ring, want) {
		t.Errorf("20.0 ring %v, want %v", v["Compute-A"].Ring, want)
	}
	if got, want := v["Compute-A"].Managed(f.nodes.UUID), f.want(t, []string{"Compute-A", "compute-b"}, "Compute-A"); !slices.Equal(got, want) {
		t.Errorf("20.0 Compute-A manages %d, want %d", len(got), len(want))
	}
	// two services differing only in case are one ring member, and both
	// claim the same nodes (PostgreSQL allows both rows)
	g := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 100)
	g.service("x", 0)
	g.service("X", 0)
	g.computes(hosts("x", "X")...)
	w := g.views(t)
	if !slices.Equal(w["x"].Ring, []string{"x"}) || !slices.Equal(w["x"].Managed(g.nodes.UUID), w["X"].Managed(g.nodes.UUID)) || len(w["x"].Nodes) != 100 {
		t.Errorf("x and X: rings %v %v, %d and %d nodes", w["x"].Ring, w["X"].Ring, len(w["x"].Nodes), len(w["X"].Nodes))
	}
	claims := Claims(Views(g.input()), g.nodes.UUID)
	for _, n := range g.nodes {
		if c := claims[n.UUID]; len(c) != 2 {
			t.Fatalf("node %s: claims %v, want two", n.UUID, c)
		}
	}
}

func TestInstances(t *testing.T) {
	f := newFleet(rules.MustRelease("26.2"), rules.PostgreSQL, 40)
	f.service("a", 0)
	f.service("b", 0)
	f.nodes[0].InstanceUUID = "i-a"     // a's instance
	f.nodes[1].InstanceUUID = "i-b"     // b's
	f.nodes[2].InstanceUUID = "i-gone"  // deleted in Nova (not read): no one manages it
	f.nodes[3].InstanceUUID = "i-upper" // instances.host "A": not a's (exact)
	f.nodes[4].InstanceUUID = "i-none"  // no such instance
	f.in.Cell.Instances = []Instance{
		{UUID: KeyOf("i-a"), Host: "a", Node: KeyOf(f.nodes[0].UUID)},
		{UUID: KeyOf("i-b"), Host: "b", Node: KeyOf(f.nodes[1].UUID)},
		{UUID: KeyOf("i-upper"), Host: "A"},
	}
	f.computes(hosts("a", "b")...)
	v := f.views(t)
	if source(v["a"], f.nodes, f.nodes[0].UUID) != rules.NovaSourceInstance || source(v["b"], f.nodes, f.nodes[1].UUID) != rules.NovaSourceInstance {
		t.Error("each compute manages the nodes of its instances")
	}
	if source(v["a"], f.nodes, f.nodes[1].UUID) != rules.NovaSourceNone {
		t.Error("a manages b's instance's node")
	}
	claims := Claims(Views(f.input()), f.nodes.UUID)
	for i := 2; i <= 4; i++ {
		if c, ok := claims[f.nodes[i].UUID]; ok {
			t.Errorf("node %d (instance %s) claimed by %v", i, f.nodes[i].InstanceUUID, c)
		}
	}
	// every node without an instance is claimed exactly once (same views)
	for _, n := range f.nodes[5:] {
		if c := claims[n.UUID]; len(c) != 1 || c[0].Source != rules.NovaSourceRing {
			t.Errorf("node %s: claims %v", n.UUID, c)
		}
	}
}

func TestPeerListAndGroups(t *testing.T) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 60)
	for i := range f.nodes {
		f.nodes[i].ConductorGroup = []string{"g1", "g2", ""}[i%3]
	}
	f.service("a", 0)
	f.service("b", 0)
	f.service("c", 0)
	f.service("d", time.Hour) // down
	f.computes(
		Compute{Host: "a", ConductorGroup: strp("g1"), PeerList: []string{"a", "b", "d"}},
		Compute{Host: "b", ConductorGroup: strp("g1"), PeerList: []string{"a", "b", "d"}},
		Compute{Host: "c", ConductorGroup: strp("")}, // no peer list: InvalidPeerList
		Compute{Host: "e", ConductorGroup: strp("g2"), PeerList: []string{"x"}},
		Compute{Host: "f"}, // no group: every node, ring of every up compute
	)
	v := f.views(t)
	if want := []string{"a", "b"}; !slices.Equal(v["a"].Ring, want) || !slices.Equal(v["b"].Ring, want) {
		t.Errorf("rings %v %v, want %v (d down)", v["a"].Ring, v["b"].Ring, want)
	}
	for _, u := range append(v["a"].Managed(f.nodes.UUID), v["b"].Managed(f.nodes.UUID)...) {
		if i := slices.IndexFunc(f.nodes, func(n IronicNode) bool { return n.UUID == u }); f.nodes[i].ConductorGroup != "g1" {
			t.Errorf("a or b manages %s of group %q", u, f.nodes[i].ConductorGroup)
		}
	}
	if len(v["a"].Nodes)+len(v["b"].Nodes) != 20 {
		t.Errorf("a and b manage %d+%d of group g1's 20", len(v["a"].Nodes), len(v["b"].Nodes))
	}
	var ipl *rules.InvalidPeerList
	if !errors.As(v["c"].Err, &ipl) || !ipl.Empty || len(v["c"].Nodes) != 0 {
		t.Errorf("c: %v", v["c"].Err)
	}
	if !errors.As(v["e"].Err, &ipl) || ipl.Empty {
		t.Errorf("e: %v", v["e"].Err)
	}
	if want := []string{"a", "b", "c", "f"}; !slices.Equal(v["f"].Ring, want) {
		t.Errorf("f's ring %v, want %v", v["f"].Ring, want)
	}
	if got, want := v["f"].Managed(f.nodes.UUID), f.want(t, []string{"a", "b", "c", "f"}, "f"); !slices.Equal(got, want) {
		t.Errorf("f manages %d, want %d", len(got), len(want))
	}
	// "GroupA" lists nothing from a PostgreSQL Ironic, everything of groupa from a MySQL one
	f.nodes[0].ConductorGroup = "groupa"
	f.computes(Compute{Host: "a", ConductorGroup: strp("GroupA"), PeerList: []string{"a"}})
	if n := len(f.views(t)["a"].Nodes); n != 0 {
		t.Errorf("PostgreSQL Ironic: %d nodes", n)
	}
	f.in.IronicBackend = rules.MySQL
	if n := len(f.views(t)["a"].Nodes); n != 1 {
		t.Errorf("MySQL Ironic: %d nodes, want 1", n)
	}
}

func TestShard(t *testing.T) {
	f := newFleet(rules.MustRelease("29.0"), rules.PostgreSQL, 30)
	for i := range f.nodes {
		f.nodes[i].Shard = []string{"s1", "s2", ""}[i%3]
	}
	f.nodes[0].ParentNode = f.nodes[3].UUID // a child: never listed
	f.service("A", 0)
	f.service("b", 0)
	f.computes(Compute{Host: "A", Shard: "s1", ConductorGroup: strp("ignored-for-peers")}, Compute{Host: "b", Shard: "s2"})
	f.nodes[3].ConductorGroup = "ignored-for-peers"
	v := f.views(t)
	if !slices.Equal(v["A"].Ring, []string{"a"}) || !slices.Equal(v["b"].Ring, []string{"b"}) {
		t.Errorf("shard rings %v %v, want the compute alone", v["A"].Ring, v["b"].Ring)
	}
	if len(v["A"].Nodes) != 1 || source(v["A"], f.nodes, f.nodes[3].UUID) != rules.NovaSourceRing {
		t.Errorf("A (shard s1 and a conductor group): %v", v["A"].Managed(f.nodes.UUID))
	}
	if len(v["b"].Nodes) != 10 {
		t.Errorf("b manages %d of shard s2's 10", len(v["b"].Nodes))
	}
	// 27.0 has no shard: the options are ignored, the ring is both
	f.in.Rules = rules.NewNova(rules.MustRelease("27.0"), rules.PostgreSQL, rules.DefaultNovaSettings())
	f.computes(Compute{Host: "b", Shard: "s2"})
	if v := f.views(t)["b"]; !slices.Equal(v.Ring, []string{"a", "b"}) {
		t.Errorf("27.0 ring %v", v.Ring)
	}
}

func TestTwoCells(t *testing.T) {
	// each cell is its own Input: a compute's ring holds its cell's services only
	c1 := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 50)
	c1.service("a", 0)
	c1.service("b", 0)
	c2 := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 50)
	c2.nodes = c1.nodes
	c2.service("c", 0)
	c1.computes(hosts("a", "b")...)
	c2.computes(hosts("c")...)
	claims := Claims(append(Views(c1.input()), Views(c2.input())...), c1.nodes.UUID)
	for _, n := range c1.nodes {
		if c := claims[n.UUID]; len(c) != 2 {
			t.Fatalf("%s: %v; every node is claimed once per cell", n.UUID, c)
		}
	}
}

func BenchmarkViews100k(b *testing.B) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 100000)
	var cs []Compute
	for i := range 100 {
		h := fmt.Sprintf("ironic-compute-%03d", i)
		f.service(h, 0)
		cs = append(cs, Compute{Host: h})
	}
	f.computes(cs...)
	for b.Loop() {
		Views(f.input())
	}
}

func TestDefaultComputes(t *testing.T) {
	f := newFleet(rules.MustRelease("31.0"), rules.PostgreSQL, 1)
	f.service("a", 0)
	f.service("disabled", 0, func(s *Service, _ *ComputeNode) { s.Disabled = true })
	f.service("down", time.Hour)
	f.service("deleted", 0, func(s *Service, _ *ComputeNode) { s.Deleted = true })
	f.service("qemu", 0, notIronic)
	f.service("softcn", 0, softDeleted)
	var got []string
	for _, c := range DefaultComputes(f.in.Rules, f.in.Cell) {
		got = append(got, c.Host)
		if c.ConductorGroup != nil || c.Shard != "" || c.PeerList != nil {
			t.Errorf("%s: settings %+v", c.Host, c)
		}
	}
	if want := []string{"a", "disabled", "down", "softcn"}; !slices.Equal(got, want) {
		t.Errorf("DefaultComputes = %v, want %v", got, want)
	}
}
