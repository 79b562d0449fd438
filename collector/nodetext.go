package collector

import (
	"io"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
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

// nodeTextFlush is how many bytes of node lines are buffered before they
// are written out, each write a chunk of the response and a write(2): a
// plain scrape holds 512 kB of the family at a time, not the family (180 MB
// at 1M nodes, a third of the live heap target), at most --web.max-renders
// of them at once.
const nodeTextFlush = 512 << 10

// writeNodeFamily writes the node family of t to w, the nodes in order (t's
// nodeInfoOrder), through a buffer of about nodeTextFlush bytes.
func writeNodeFamily(w io.Writer, t *topology.Topology, order []int32) error {
	if len(order) == 0 {
		return nil
	}
	b := make([]byte, 0, nodeTextFlush+1024)
	b = exposition.AppendHead(b, &nodeInfoFamily.Family)
	for _, i := range order {
		n := &t.Nodes[i]
		b = append(b, nodeInfoName+`{conductor="`...)
		b = exposition.AppendLabelValue(b, n.Conductor)
		b = append(b, `",conductor_group="`...)
		b = exposition.AppendLabelValue(b, n.ConductorGroup)
		b = append(b, `",driver="`...)
		b = exposition.AppendLabelValue(b, n.Driver)
		b = append(b, `",node_name="`...)
		b = exposition.AppendLabelValue(b, n.NameOrEmpty())
		b = append(b, `",node_uuid="`...)
		b = exposition.AppendLabelValue(b, n.UUID)
		b = append(b, "\"} 1\n"...)
		if len(b) >= nodeTextFlush {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}
