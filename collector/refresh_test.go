package collector

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestNodeReadsCounted: ironic_exporter_node_reads_total counts the
// snapshots read by their kind of node read, every kind from 0, also when
// building the topology failed, and not a refresh that read no snapshot.
func TestNodeReadsCounted(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewRefreshMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := func(full, delta, skipped string) {
		t.Helper()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ironic_exporter_node_reads_total Snapshots read from the database, by how they read the nodes: full (every node), delta (only the rows changed since the last read, merged into it), skipped (the change probe said unchanged).
# TYPE ironic_exporter_node_reads_total counter
ironic_exporter_node_reads_total{kind="delta"} `+delta+`
ironic_exporter_node_reads_total{kind="full"} `+full+`
ironic_exporter_node_reads_total{kind="skipped"} `+skipped+`
`), "ironic_exporter_node_reads_total"); err != nil {
			t.Error(err)
		}
	}
	want("0", "0", "0")
	for _, r := range []topology.Refresh{
		{NodeRead: db.NodeReadFull},
		{NodeRead: db.NodeReadDelta},
		{NodeRead: db.NodeReadDelta, Err: errors.New("building failed")},
		{NodeRead: db.NodeReadSkipped},
		{Err: errors.New("connection refused")},
	} {
		m.Observe(r)
	}
	want("1", "2", "1")
}
