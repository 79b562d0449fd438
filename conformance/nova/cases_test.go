package novaconformance

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The cases' JSON, as reference.py reads it.
type (
	caseJSON struct {
		Name          string         `json:"name"`
		Now           string         `json:"now"`
		Settings      settingsJSON   `json:"settings"`
		IronicBackend string         `json:"ironic_backend"`
		Nodes         []nodeJSON     `json:"nodes"`
		Cells         []cellCaseJSON `json:"cells"`
	}
	settingsJSON struct {
		ServiceDownTime int `json:"service_down_time"`
		ReportInterval  int `json:"report_interval"`
	}
	nodeJSON struct {
		UUID           string `json:"uuid"`
		ConductorGroup string `json:"conductor_group"`
		Shard          string `json:"shard,omitempty"`
		InstanceUUID   string `json:"instance_uuid,omitempty"`
		ParentNode     string `json:"parent_node,omitempty"`
	}
	cellCaseJSON struct {
		Name         string        `json:"name"`
		Services     []serviceJSON `json:"services"`
		ComputeNodes []cnJSON      `json:"compute_nodes"`
		Instances    []instJSON    `json:"instances"`
		Computes     []computeJSON `json:"computes"`
	}
	serviceJSON struct {
		Host       string  `json:"host"`
		Binary     string  `json:"binary"`
		Disabled   bool    `json:"disabled,omitempty"`
		ForcedDown bool    `json:"forced_down,omitempty"`
		Deleted    bool    `json:"deleted,omitempty"`
		CreatedAt  string  `json:"created_at"`
		LastSeenUp *string `json:"last_seen_up"`
	}
	cnJSON struct {
		Host           string `json:"host"`
		UUID           string `json:"uuid"`
		HypervisorType string `json:"hypervisor_type"`
		Deleted        bool   `json:"deleted,omitempty"`
	}
	instJSON struct {
		UUID    string `json:"uuid"`
		Host    string `json:"host"`
		Node    string `json:"node,omitempty"`
		Deleted bool   `json:"deleted,omitempty"`
	}
	computeJSON struct {
		Host           string   `json:"host"`
		ConductorGroup *string  `json:"conductor_group"`
		Shard          string   `json:"shard,omitempty"`
		PeerList       []string `json:"peer_list"`
	}
)

const isoLayout = "2006-01-02T15:04:05.000000"

var caseNow = time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)

func at(d time.Duration) string { return caseNow.Add(-d).Format(isoLayout) }
func seen(d time.Duration) *string {
	s := at(d)
	return &s
}
func strp(s string) *string { return &s }

func nodeUUID(c, i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", c, i) }
func instUUID(c, i int) string { return fmt.Sprintf("%08x-1111-4000-8000-%012x", c, i) }
func cnUUID(c, i int) string   { return fmt.Sprintf("%08x-2222-4000-8000-%012x", c, i) }
func svc(host string, age time.Duration) serviceJSON {
	return serviceJSON{Host: host, Binary: "nova-compute", CreatedAt: at(2 * time.Hour), LastSeenUp: seen(age)}
}
func cn(c, i int, host string) cnJSON {
	return cnJSON{Host: host, UUID: cnUUID(c, i), HypervisorType: "ironic"}
}

// fleetNodes makes n nodes of case c, none with an instance.
func fleetNodes(c, n int) []nodeJSON {
	out := make([]nodeJSON, n)
	for i := range out {
		out[i] = nodeJSON{UUID: nodeUUID(c, i)}
	}
	return out
}

func computes(hosts ...string) []computeJSON {
	out := make([]computeJSON, len(hosts))
	for i, h := range hosts {
		out[i] = computeJSON{Host: h}
	}
	return out
}

// fixedCases are the boundary cases issue 32 lists. backend is Nova's: on
// MySQL two services whose hosts differ only in case cannot both exist
// (the unique key compares without case), so that case is left out there.
func fixedCases(backend rules.Backend) []caseJSON {
	s := time.Second
	base := func(id int, name string) caseJSON {
		return caseJSON{Name: name, Now: caseNow.Format(isoLayout), Settings: settingsJSON{60, 10},
			IronicBackend: "postgresql", Nodes: fleetNodes(id, 64)}
	}
	var cs []caseJSON

	c := base(1, "service_down_time boundary")
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services: []serviceJSON{svc("c-fresh", 0), svc("c-edge", 60*s), svc("c-past", 61*s),
			svc("c-micro", 60*s+time.Microsecond), svc("c-ahead", -60*s), svc("c-far-ahead", -61*s)},
		ComputeNodes: []cnJSON{cn(1, 0, "c-fresh"), cn(1, 1, "c-edge"), cn(1, 2, "c-past"), cn(1, 3, "c-micro"),
			cn(1, 4, "c-ahead"), cn(1, 5, "c-far-ahead")},
		Computes: computes("c-fresh", "c-past")}}
	cs = append(cs, c)

	c = base(2, "report_interval override")
	c.Settings = settingsJSON{30, 30} // 30 <= 30: int(2.5 * 30) = 75
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services:     []serviceJSON{svc("r-a", 0), svc("r-74", 74*s), svc("r-75", 75*s), svc("r-76", 76*s)},
		ComputeNodes: []cnJSON{cn(2, 0, "r-a"), cn(2, 1, "r-74"), cn(2, 2, "r-75"), cn(2, 3, "r-76")},
		Computes:     computes("r-a")}}
	cs = append(cs, c)

	c = base(3, "forced down, disabled, deleted, never reported, not ironic, soft-deleted compute nodes")
	forced, disabled, deleted := svc("f-forced", 0), svc("f-disabled", 0), svc("f-deleted", 0)
	forced.ForcedDown, disabled.Disabled, deleted.Deleted = true, true, true
	never := svc("f-never", 0)
	never.LastSeenUp, never.CreatedAt = nil, at(30*s)
	neverOld := svc("f-never-old", 0)
	neverOld.LastSeenUp = nil
	softcn := cn(3, 6, "f-softcn")
	softcn.Deleted = true
	qemu := cn(3, 7, "f-qemu")
	qemu.HypervisorType = "QEMU"
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services: []serviceJSON{svc("f-a", 0), forced, disabled, deleted, never, neverOld, svc("f-softcn", 0), svc("f-qemu", 0),
			{Host: "f-cond", Binary: "nova-conductor", CreatedAt: at(time.Hour), LastSeenUp: seen(0)}},
		ComputeNodes: []cnJSON{cn(3, 0, "f-a"), cn(3, 1, "f-forced"), cn(3, 2, "f-disabled"), cn(3, 3, "f-deleted"),
			cn(3, 4, "f-never"), cn(3, 5, "f-never-old"), softcn, qemu, cn(3, 8, "f-cond")},
		Computes: computes("f-a", "f-forced", "f-disabled")}}
	cs = append(cs, c)

	c = base(4, "hostnames differing in case")
	svcs := []serviceJSON{svc("Compute-A", 0), svc("compute-b", 0), svc("Compute-C", 0)}
	cns := []cnJSON{cn(4, 0, "Compute-A"), cn(4, 1, "compute-b"), cn(4, 2, "compute-c")} // C's row in lower case
	if backend != rules.MySQL {
		svcs = append(svcs, svc("COMPUTE-B", 0))
		cns = append(cns, cn(4, 3, "COMPUTE-B"))
	}
	c.Cells = []cellCaseJSON{{Name: "cell1", Services: svcs, ComputeNodes: cns,
		Instances: []instJSON{{UUID: instUUID(4, 0), Host: "compute-a", Node: nodeUUID(4, 0)}},
		Computes:  computes("Compute-A", "compute-b", "Compute-C")}}
	c.Nodes[0].InstanceUUID = instUUID(4, 0) // instance host in other case: not Compute-A's
	if backend != rules.MySQL {
		c.Cells[0].Computes = append(c.Cells[0].Computes, computeJSON{Host: "COMPUTE-B"})
	}
	cs = append(cs, c)

	c = base(5, "peer_list and conductor_group")
	for i := range c.Nodes {
		c.Nodes[i].ConductorGroup = []string{"g1", "g2", ""}[i%3]
	}
	c.Nodes[1].ConductorGroup = "groupa"
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services: []serviceJSON{svc("p-a", 0), svc("p-b", 0), svc("p-c", 0), svc("p-d", time.Hour), svc("p-e", 0)},
		ComputeNodes: []cnJSON{cn(5, 0, "p-a"), cn(5, 1, "p-b"), cn(5, 2, "p-c"), cn(5, 3, "p-d"),
			cn(5, 4, "p-e")},
		Computes: []computeJSON{
			{Host: "p-a", ConductorGroup: strp("g1"), PeerList: []string{"p-a", "p-b", "p-d", "p-z"}},
			{Host: "p-b", ConductorGroup: strp("g1"), PeerList: []string{"p-a", "p-b"}},
			{Host: "p-c", ConductorGroup: strp("")},                                          // InvalidPeerList: empty
			{Host: "p-e", ConductorGroup: strp("g2"), PeerList: []string{"P-E"}},             // InvalidPeerList: not itself
			{Host: "p-d", ConductorGroup: strp("GroupA"), PeerList: []string{"p-d"}},         // the case Ironic's backend decides
			{Host: "p-x", ConductorGroup: strp(""), PeerList: []string{"p-x", "p-a", "p-e"}}, // no service row of its own
		}}}
	cs = append(cs, c)
	c2 := c
	c2.Name = "conductor_group on a MySQL Ironic"
	c2.IronicBackend = "mysql"
	cs = append(cs, c2)

	c = base(6, "shard")
	for i := range c.Nodes {
		c.Nodes[i].Shard = []string{"s1", "s2", ""}[i%3]
		c.Nodes[i].ConductorGroup = []string{"", "g1"}[i%2]
	}
	c.Nodes[0].ParentNode = nodeUUID(6, 3) // a child: never listed
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services:     []serviceJSON{svc("S-A", 0), svc("s-b", 0), svc("s-c", 0)},
		ComputeNodes: []cnJSON{cn(6, 0, "S-A"), cn(6, 1, "s-b"), cn(6, 2, "s-c")},
		Computes: []computeJSON{{Host: "S-A", Shard: "s1"}, {Host: "s-b", Shard: "s2", ConductorGroup: strp("g1")},
			{Host: "s-c"}}}}
	cs = append(cs, c)

	c = base(7, "instances on another host")
	for i := range 8 {
		c.Nodes[i].InstanceUUID = instUUID(7, i)
	}
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services:     []serviceJSON{svc("i-a", 0), svc("i-b", 0), svc("i-down", time.Hour)},
		ComputeNodes: []cnJSON{cn(7, 0, "i-a"), cn(7, 1, "i-b"), cn(7, 2, "i-down")},
		Instances: []instJSON{
			{UUID: instUUID(7, 0), Host: "i-a", Node: nodeUUID(7, 0)},
			{UUID: instUUID(7, 1), Host: "i-b", Node: nodeUUID(7, 1)},
			{UUID: instUUID(7, 2), Host: "i-down", Node: nodeUUID(7, 2)},
			{UUID: instUUID(7, 3), Host: "i-a", Node: nodeUUID(7, 3), Deleted: true},
			{UUID: instUUID(7, 4), Host: "i-gone", Node: nodeUUID(7, 4)},
			{UUID: instUUID(7, 5), Host: "i-a", Node: nodeUUID(7, 1)}, // Nova's node differs from Ironic's
			// 6 and 7: Ironic's instance_uuid unknown to Nova
		},
		Computes: computes("i-a", "i-b", "i-down")}}
	cs = append(cs, c)

	c = base(8, "two cells, the second's connection a template")
	c.Cells = []cellCaseJSON{
		{Name: "cell1", Services: []serviceJSON{svc("cell1-a", 0), svc("cell1-b", 0)},
			ComputeNodes: []cnJSON{cn(8, 0, "cell1-a"), cn(8, 1, "cell1-b")}, Computes: computes("cell1-a", "cell1-b")},
		{Name: "cell2", Services: []serviceJSON{svc("cell2-a", 0), svc("cell2-b", 90*s)},
			ComputeNodes: []cnJSON{cn(8, 2, "cell2-a"), cn(8, 3, "cell2-b")}, Computes: computes("cell2-a")},
	}
	cs = append(cs, c)

	// CONF.host is a HostDomainOpt (commit 0d84833e96, 24.0): a compute's
	// own name is ASCII, but services rows may hold any text
	c = base(9, "non-ASCII service hosts: Python's lower()")
	c.Cells = []cellCaseJSON{{Name: "cell1",
		Services:     []serviceJSON{svc("İSTANBUL-1", 0), svc("ΟΔΟΣ", 0), svc("ǅemal", 0), svc("Ascii-A", 0)},
		ComputeNodes: []cnJSON{cn(9, 0, "İSTANBUL-1"), cn(9, 1, "ΟΔΟΣ"), cn(9, 2, "ǅemal"), cn(9, 3, "Ascii-A")},
		Computes:     computes("Ascii-A")}}
	cs = append(cs, c)
	return cs
}

// randomCase is a generated fleet: hosts near the service_down_time
// boundary, random flags, groups, shards, peers, instances and children.
func randomCase(seed int, backend rules.Backend) caseJSON {
	r := rand.New(rand.NewPCG(uint64(seed), 32))
	id := 1000 + seed
	sdt := []int{60, 30, 10, 120}[r.IntN(4)]
	ri := []int{10, 30, 5}[r.IntN(3)]
	c := caseJSON{Name: fmt.Sprintf("random %d", seed), Now: caseNow.Format(isoLayout), Settings: settingsJSON{sdt, ri},
		IronicBackend: []string{"postgresql", "mysql"}[r.IntN(2)]}
	eff := rules.EffectiveServiceDownTime(sdt, ri)
	groups := []string{"", "g1", "g2"}
	shards := []string{"", "s1", "s2"}
	nh := 2 + r.IntN(8)
	var hosts []string
	for i := range nh {
		h := fmt.Sprintf("rnd%d-%d", seed, i)
		if r.IntN(4) == 0 {
			h = fmt.Sprintf("Rnd%d-%d", seed, i) // upper case
		}
		hosts = append(hosts, h)
	}
	cell := cellCaseJSON{Name: "cell1"}
	for i, h := range hosts {
		ages := []time.Duration{0, time.Duration(eff) * time.Second, time.Duration(eff+1) * time.Second,
			time.Duration(eff)*time.Second + time.Microsecond, -time.Duration(eff) * time.Second, time.Hour}
		age := time.Duration(0) // half fresh, half at or around the boundary
		if r.IntN(2) == 0 {
			age = ages[r.IntN(len(ages))]
		}
		s := svc(h, age)
		s.Disabled = r.IntN(6) == 0
		s.ForcedDown = r.IntN(8) == 0
		s.Deleted = r.IntN(10) == 0
		cell.Services = append(cell.Services, s)
		ncn := 1 + r.IntN(2) // 1-2 compute nodes, sometimes none
		if r.IntN(6) == 0 {
			ncn = 0
		}
		for j := range ncn {
			x := cn(id, i*4+j, h)
			x.Deleted = r.IntN(5) == 0
			if r.IntN(10) == 0 {
				x.HypervisorType = "QEMU"
			}
			if backend == rules.MySQL && r.IntN(5) == 0 {
				x.Host = upper(h) // a join only MySQL makes
			}
			cell.ComputeNodes = append(cell.ComputeNodes, x)
		}
	}
	n := 40 + r.IntN(120)
	c.Nodes = fleetNodes(id, n)
	for i := range c.Nodes {
		c.Nodes[i].ConductorGroup = groups[r.IntN(3)]
		c.Nodes[i].Shard = shards[r.IntN(3)]
		if r.IntN(25) == 0 && i > 0 {
			c.Nodes[i].ParentNode = c.Nodes[0].UUID
		}
		if r.IntN(5) == 0 {
			u := instUUID(id, i)
			c.Nodes[i].InstanceUUID = u
			if r.IntN(6) != 0 {
				h := hosts[r.IntN(len(hosts))]
				cell.Instances = append(cell.Instances, instJSON{UUID: u, Host: h, Node: c.Nodes[i].UUID, Deleted: r.IntN(8) == 0})
			}
		}
	}
	for _, h := range hosts {
		if r.IntN(5) == 0 {
			continue // a service whose compute is not asked
		}
		cp := computeJSON{Host: h}
		switch r.IntN(5) {
		case 1:
			cp.ConductorGroup = strp(groups[r.IntN(3)])
			peers := []string{h}
			for _, o := range hosts {
				if o != h && r.IntN(2) == 0 {
					peers = append(peers, o)
				}
			}
			if r.IntN(8) == 0 {
				peers = peers[1:] // without itself: InvalidPeerList
			}
			cp.PeerList = peers
		case 2:
			cp.Shard = shards[1+r.IntN(2)]
		case 3:
			cp.Shard = shards[1+r.IntN(2)]
			cp.ConductorGroup = strp(groups[r.IntN(3)])
		}
		cell.Computes = append(cell.Computes, cp)
	}
	c.Cells = []cellCaseJSON{cell}
	return c
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
