// Package nova computes, as Nova's ironic driver does, which nova-compute
// manages each Ironic node: per compute its view (its hash ring and the
// nodes it manages), from the rows of one Nova cell database, Ironic's
// nodes and each compute's own settings. It is pure: no database, no
// Prometheus, no HTTP; the Nova reader fills the types below, rules/ says
// what each Nova release does.
//
// Each nova-compute computes its own view, at its own time: two views can
// disagree (a node claimed by two computes, or by none), and this package
// reports every view as the compute would compute it now.
package nova

import (
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Service is a row of a cell's services table.
type Service struct {
	ID     int64
	Host   string // NULL reads as ""
	Binary string
	// Disabled is disabled; NULL (never written by Nova) reads as true,
	// as the ring's filter disabled = false excludes it.
	Disabled bool
	// ForcedDown is forced_down (NULL reads as false).
	ForcedDown bool
	// Deleted is deleted != 0 (Nova's soft delete writes the row's id).
	Deleted    bool
	CreatedAt  time.Time // naive UTC; zero for NULL
	LastSeenUp time.Time // naive UTC; zero for NULL
	// Version is services.version (the Service object version the
	// service wrote: 64 = 26.x, 66 = 27.x-28.x, 67 = 29.x-30.x, 68 = 31.x).
	Version int
}

// ComputeNode is a live row (deleted = 0) of a cell's compute_nodes table
// with hypervisor_type 'ironic', as the cell's database compares it (the
// reader filters them, as the join of service_get_all_computes_by_hv_type
// does the type). Its id, hypervisor_type and deleted are not kept: the
// rows live between reads (the memory row).
type ComputeNode struct {
	// UUID is compute_nodes.uuid: the Ironic node's uuid for ironic
	// computes (27.0+ looks rows up by it).
	UUID Key
	// Host is the host of the compute that last claimed the node ("" for
	// NULL).
	Host               string
	HypervisorHostname Key // the Ironic node's uuid for ironic computes
}

// Instance is a live row (deleted = 0, the reader's filter, as
// InstanceList.get_uuids_by_host's) of a cell's instances table, the
// columns the answer needs.
type Instance struct {
	UUID Key
	Host string // NULL reads as ""; "" matches no compute
	Node Key    // instances.node: the Ironic node's uuid
}

// Key is the value of a uuid column of the rows kept between reads
// (ComputeNode, Instance): a uuid as oslo's uuidutils writes it (36
// characters, lower-case hex) as its 16 bytes, any other text (NULL read
// as "") as is. Two Keys are equal exactly when their texts are. The rows
// then hold no pointer the garbage collector follows at each cycle, where
// a string of its own per uuid did: the CPU row with Nova while nodes
// change (docs/performance.md) fails without it.
type Key struct {
	uuid [16]byte
	text string // the value when it is no such uuid (or the nil uuid)
}

// KeyOf is the Key of the text s.
func KeyOf(s string) Key {
	var k Key
	if len(s) != 36 {
		return Key{text: s}
	}
	for i, j := 0, 0; i < 36; j++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return Key{text: s}
			}
			i++
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi > 15 || lo > 15 {
			return Key{text: s}
		}
		k.uuid[j] = hi<<4 | lo
		i += 2
	}
	if k.uuid == ([16]byte{}) {
		return Key{text: s} // the nil uuid, told apart from ""
	}
	return k
}

// keyIndex maps Keys to node indexes: the uuids in 16 bytes, as Key keeps
// them, in a map half as wide as one keyed by Key. A Nova answer's
// transient maps are part of the peak of the peak RSS row with Nova
// (docs/performance.md), which fails with maps keyed by Key.
type keyIndex struct {
	uuids map[[16]byte]int32
	texts map[string]int32 // the Keys kept as text; made at the first
}

// newKeyIndex returns an index for about n Keys.
func newKeyIndex(n int) keyIndex { return keyIndex{uuids: make(map[[16]byte]int32, n)} }

// set maps k to i.
func (x *keyIndex) set(k Key, i int32) {
	if k.uuid == ([16]byte{}) {
		if x.texts == nil {
			x.texts = map[string]int32{}
		}
		x.texts[k.text] = i
		return
	}
	x.uuids[k.uuid] = i
}

// get is the index k maps to.
func (x keyIndex) get(k Key) (int32, bool) {
	if k.uuid == ([16]byte{}) {
		i, ok := x.texts[k.text]
		return i, ok
	}
	i, ok := x.uuids[k.uuid]
	return i, ok
}

// unhex is the value of a lower-case hex digit, 255 for any other byte.
func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

// String is k's text.
func (k Key) String() string {
	if k.uuid == ([16]byte{}) {
		return k.text
	}
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for j, c := range k.uuid {
		if j == 4 || j == 6 || j == 8 || j == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&15])
	}
	return string(b)
}

// Cell is what one Nova cell database holds that the answer needs.
type Cell struct {
	// Name and UUID are the cell's, from nova_api's cell_mappings.
	Name, UUID   string
	Services     []Service
	ComputeNodes []ComputeNode
	// SoftDeletedHosts are the distinct hosts ("" for NULL) of the
	// soft-deleted (deleted != 0) ironic compute_nodes rows: the join of
	// service_get_all_computes_by_hv_type does not filter
	// compute_nodes.deleted, so their services stay ring candidates.
	SoftDeletedHosts []string
	Instances        []Instance
}

// IronicNode is what Nova's node list gives of a node, from Ironic's
// nodes table.
type IronicNode struct {
	UUID           string
	ConductorGroup string
	Shard          string // NULL reads as ""
	InstanceUUID   string // NULL reads as ""
	ParentNode     string // NULL reads as ""
	// ProvisionState and Maintenance are not in Nova's node list filter;
	// the problems (Fleet) use them.
	ProvisionState string
	Maintenance    bool
}

// Nodes are Ironic's nodes, every one of them, as Nova's node list gives
// them.
type Nodes []IronicNode

// UUID is the uuid of node i.
func (ns Nodes) UUID(i int) string { return ns[i].UUID }

// Compute is one nova-compute's own settings (its nova.conf).
type Compute = rules.NovaCompute

// Input is everything one cell's answer depends on.
type Input struct {
	// Now is the time the computes ask at (their clock).
	Now time.Time
	// Rules are Nova's rules for the cell's release and backend.
	Rules rules.NovaRules
	// IronicBackend is the backend of Ironic's database, whose collation
	// decides the node list's conductor_group and shard filters.
	IronicBackend rules.Backend
	Cell          Cell
	// Nodes are Ironic's nodes, every one of them.
	Nodes Nodes
	// Computes are the nova-computes of the cell whose views to compute,
	// with their settings.
	Computes []Compute
	// InstanceOnly computes the views by instance alone (no ring, no ring
	// claims): Answer's views of the computes that are down.
	InstanceOnly bool
}
