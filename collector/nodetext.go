package collector

import (
	"io"
	"runtime"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The node family, ironic_node_conductor_info, is one series per node: on
// a large fleet it is nearly all of /metrics. It is written here straight
// from the topology, without a dto.Metric per node or a registry, in the
// bytes client_golang writes for it (a registry's Gather, then expfmt's
// text encoder; TestNodeFamilyIsClientGolang and FuzzNodeFamily hold the
// two side by side):
//
//   - the HELP line (help text escaped: \ and newline), the TYPE line;
//   - one line per node, in the registry's order (nodeInfoOrder): the label
//     pairs sorted by name, each value in double quotes with \, " and
//     newline escaped, then " 1" (expfmt's float formatting of 1);
//   - nothing at all, not even HELP, when there are no nodes (a registry
//     gathers no empty family).
//
// Label values are written as they are otherwise: the database reader
// guarantees valid UTF-8 (db replaces invalid bytes with U+FFFD), which
// client_golang requires (MustNewConstMetric panics on anything else).

const nodeInfoName = "ironic_node_conductor_info"

const nodeInfoHelp = "1 per node; conductor is the hostname the hash ring maps it to, empty when no conductor can serve it."

// nodeFamilyHead is the HELP and TYPE lines of the node family.
var nodeFamilyHead = "# HELP " + nodeInfoName + " " + helpEscaper.Replace(nodeInfoHelp) + "\n" +
	"# TYPE " + nodeInfoName + " gauge\n"

// helpEscaper escapes a HELP text as expfmt does.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// nodeTextFlush is how many bytes of node lines are buffered before they
// are written out: each write is a chunk of the response and a write(2),
// and 64 KiB made a plain scrape of 100k nodes about a sixth slower than
// 512 KiB (BenchmarkMetrics/identity, alternated). At most
// --web.max-renders renders hold one at a time.
const nodeTextFlush = 512 << 10

// nodeLayout is what writing the node family needs beyond the topology,
// computed once per node generation: about 4 bytes a node.
type nodeLayout struct {
	// order holds the node indexes in the registry's order (nodeInfoOrder).
	order []int32
	// runStart has bit k set when order[k] is the first node of a run of
	// the same conductor, group and driver: the line up to node_name's
	// value is the same for the whole run.
	runStart bitset
	// escape has bit k set when order[k]'s name or UUID holds a byte that
	// needs escaping.
	escape bitset
}

// bitset is a set of small integers.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (s bitset) set(k int)      { s[k/64] |= 1 << (k % 64) }
func (s bitset) has(k int) bool { return s[k/64]&(1<<(k%64)) != 0 }

// newNodeLayout computes the layout of t's node family.
func newNodeLayout(t *topology.Topology) *nodeLayout {
	l := &nodeLayout{order: nodeInfoOrder(t)}
	l.runStart, l.escape = newBitset(len(l.order)), newBitset(len(l.order))
	for k, i := range l.order {
		n := &t.Nodes[i]
		if k == 0 {
			l.runStart.set(k)
		} else if p := &t.Nodes[l.order[k-1]]; n.Conductor != p.Conductor || n.ConductorGroup != p.ConductorGroup ||
			n.Driver != p.Driver {
			l.runStart.set(k)
		}
		if needsEscaping(n.NameOrEmpty()) || needsEscaping(n.UUID) {
			l.escape.set(k)
		}
	}
	return l
}

// writeNodeFamily writes the node family of t to w as l lays it out (l is
// of t's node generation), through a buffer of about nodeTextFlush bytes.
//
// The order is the labels', not the nodes' order in memory, so each node is
// a chain of loads from all over the heap, each likely a cache miss: its
// NodeInfo, its db.Node, the name's string header, the name's and the
// UUID's bytes. Followed one node at a time the chains run one after the
// other and the misses, not the writing, take most of the time (4x the CPU
// of the batched loop on 100,000 nodes). So the nodes go in batches of
// nodeBatch, each link of the chains loaded for the whole batch in a short
// loop of independent loads, which the processor overlaps, before the
// batch's lines are written.
func writeNodeFamily(w io.Writer, t *topology.Topology, l *nodeLayout) error {
	if len(l.order) == 0 {
		return nil
	}
	b := make([]byte, 0, nodeTextFlush+1024)
	b = append(b, nodeFamilyHead...)
	var prefix []byte
	var batch [nodeBatch]struct {
		node       *db.Node
		name, uuid string
	}
	var touched byte // the loads that only bring memory into the cache
	for lo := 0; lo < len(l.order); lo += nodeBatch {
		run := l.order[lo:min(lo+nodeBatch, len(l.order))]
		for j, i := range run {
			batch[j].node = t.Nodes[i].Node
		}
		for j := range run {
			a := &batch[j]
			a.uuid, a.name = a.node.UUID, ""
			if a.node.Name != nil {
				a.name = *a.node.Name
			}
		}
		for j := range run {
			if u := batch[j].uuid; len(u) > 0 {
				touched ^= u[0]
			}
			if s := batch[j].name; len(s) > 0 {
				touched ^= s[0]
			}
		}
		for j := range run {
			k := lo + j
			if l.runStart.has(k) {
				n := &t.Nodes[run[j]]
				prefix = append(prefix[:0], nodeInfoName+`{conductor="`...)
				prefix = appendLabelValue(prefix, n.Conductor)
				prefix = append(prefix, `",conductor_group="`...)
				prefix = appendLabelValue(prefix, n.ConductorGroup)
				prefix = append(prefix, `",driver="`...)
				prefix = appendLabelValue(prefix, n.Driver)
				prefix = append(prefix, `",node_name="`...)
			}
			a := &batch[j]
			b = append(b, prefix...)
			if l.escape.has(k) {
				b = appendLabelValue(b, a.name)
				b = append(b, `",node_uuid="`...)
				b = appendLabelValue(b, a.uuid)
			} else {
				b = append(b, a.name...)
				b = append(b, `",node_uuid="`...)
				b = append(b, a.uuid...)
			}
			b = append(b, "\"} 1\n"...)
			if len(b) >= nodeTextFlush {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
	}
	runtime.KeepAlive(touched)
	_, err := w.Write(b)
	return err
}

// nodeBatch is how many nodes writeNodeFamily loads at a time.
const nodeBatch = 64

// needsEscape marks the bytes expfmt escapes in a label value.
var needsEscape = [256]bool{'\\': true, '"': true, '\n': true}

// needsEscaping reports whether s holds a byte appendLabelValue escapes.
func needsEscaping(s string) bool {
	for i := 0; i < len(s); i++ {
		if needsEscape[s[i]] {
			return true
		}
	}
	return false
}

// appendLabelValue appends s escaped as expfmt escapes a label value:
// \ as \\, " as \", newline as \n.
func appendLabelValue(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, '\\', c)
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}
