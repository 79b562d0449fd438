package db

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/bench"
)

// BenchmarkNodeRead is a full snapshot of n nodes through lib/pq ("libpq")
// next to its floor, "copy": COPY of SQLNodes' rows to psql, the time psql
// itself reports (\timing), so that starting psql is not counted, of the
// statement the reader words for the database's schema. Both
// reach the server over TCP without TLS. The sub-benchmarks repeat in
// alternated rounds (ICE_BENCH_ROUNDS).
func BenchmarkNodeRead(b *testing.B) {
	needPG(b)
	psql, err := exec.LookPath("psql")
	if err != nil {
		b.Skip("needs psql (postgresql-client)")
	}
	const n = 100_000
	conn := testDBConn(b, testDBName)
	resetTables(b, conn)
	fillBenchNodes(b, conn, n)
	b.Cleanup(func() { resetTables(b, conn) })
	ctx := context.Background()
	lib := openTest(b, testDSN+"?sslmode=disable", dbconn.Options{})
	// COPY reads the rows of the query the reader words for this schema:
	// SQLNodes names columns of the newest schema that the test database
	// may lack (nodes.health, 34.0+).
	if _, err := lib.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	nodesQuery := standardQueries.nodes[lib.gen.Load()]
	for range bench.Rounds(0) {
		b.Run(fmt.Sprintf("libpq/nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				s, err := lib.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Nodes) != n {
					b.Fatalf("%d nodes, want %d", len(s.Nodes), n)
				}
			}
		})
		b.Run(fmt.Sprintf("copy/nodes=%d", n), func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				d, err := psqlCopy(psql, "COPY ("+nodesQuery+") TO STDOUT")
				if err != nil {
					b.Fatal(err)
				}
				took += d
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N), "ns/op")
		})
	}
}

var psqlTime = regexp.MustCompile(`(?m)^Time: ([0-9.]+) ms`)

// psqlCopy runs query in psql on the test database, its rows discarded, and
// returns the time psql reports for it. A failing query is an error
// (ON_ERROR_STOP), not the time psql took to report it.
func psqlCopy(psql, query string) (time.Duration, error) {
	cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "postgres", "-d", testDBName)
	cmd.Stdin = strings.NewReader("\\o /dev/null\n\\timing on\n" + query + ";\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("psql: %w: %s", err, out)
	}
	m := psqlTime.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("psql printed no time: %s", out)
	}
	ms, err := strconv.ParseFloat(string(m[1]), 64)
	return time.Duration(ms * float64(time.Millisecond)), err
}
