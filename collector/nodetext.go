package collector

import (
	"io"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The node family, ironic_node_conductor_info, one series per node, is
// nearly all of /metrics on a large fleet. It is written straight from the
// topology, without a dto.Metric per node or a registry, in the bytes
// client_golang writes for it (TestNodeFamilyIsClientGolang and
// FuzzNodeFamily hold the two side by side): HELP and TYPE, then one line
// per node in the registry's order (nodeInfoOrder), label pairs by name,
// values escaped as expfmt escapes them, and " 1"; nothing, not even HELP,
// without nodes (a registry gathers no empty family). Label values need no
// other care: db guarantees valid UTF-8 (invalid bytes read as U+FFFD),
// which client_golang requires.

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
