package collector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
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

// TestNovaRefreshMetrics: the Nova cache's refreshes are timed and their
// failures counted, and the kind of the latest error is 1 among all the
// kinds, all 0 once a refresh works.
func TestNovaRefreshMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewNovaRefreshMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := func(errs string, kind string) {
		t.Helper()
		var b strings.Builder
		b.WriteString(`# HELP ironic_exporter_nova_last_refresh_error 1 for the kind of error the latest refresh from Nova's databases failed with (timeout, connection, auth, schema, query, other; nova_api's, else the first failing cell's); all 0 when it worked.
# TYPE ironic_exporter_nova_last_refresh_error gauge
`)
		for _, k := range []string{"auth", "connection", "other", "query", "schema", "timeout"} {
			v := "0"
			if k == kind {
				v = "1"
			}
			b.WriteString(`ironic_exporter_nova_last_refresh_error{kind="` + k + `"} ` + v + "\n")
		}
		b.WriteString(`# HELP ironic_exporter_nova_refresh_errors_total Refreshes from Nova's databases in which nova_api's read or a cell's failed.
# TYPE ironic_exporter_nova_refresh_errors_total counter
ironic_exporter_nova_refresh_errors_total ` + errs + "\n")
		if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()),
			"ironic_exporter_nova_last_refresh_error", "ironic_exporter_nova_refresh_errors_total"); err != nil {
			t.Error(err)
		}
	}
	want("0", "")
	m.Observe(novacache.Refresh{Duration: time.Second, Err: fmt.Errorf("reading nova_api: %w", context.DeadlineExceeded)})
	want("1", "timeout")
	m.Observe(novacache.Refresh{Duration: time.Second})
	want("1", "")
	if n := testutil.CollectAndCount(m.duration); n != 1 {
		t.Errorf("duration: %d series", n)
	}
	if got := testutil.ToFloat64(m.errors); got != 1 {
		t.Errorf("errors %v", got)
	}
}
