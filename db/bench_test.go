package db

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// BenchmarkSnapshot reads 20 conductors (5 hardware types each, 4 interface
// rows per type) and n nodes made with generate_series, a realistic mix of
// NULLs and repeated values.
func BenchmarkSnapshot(b *testing.B) {
	needPG(b)
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			conn := testDBConn(b, testDBName)
			resetTables(b, conn)
			fillBenchNodes(b, conn, n)
			b.Cleanup(func() { resetTables(b, conn) })

			d := openTest(b, testDSN, dbconn.Options{})
			ctx := context.Background()
			if s, err := d.Snapshot(ctx); err != nil || len(s.Nodes) != n || len(s.Conductors[0].HardwareTypes) != 5 {
				b.Fatalf("warm-up snapshot: %v", err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Snapshot(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// fillBenchNodes fills the tables with 20 conductors and n nodes.
func fillBenchNodes(b testing.TB, conn *sql.DB, n int) {
	b.Helper()
	mustExec(b, conn,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
		 SELECT i, 'conductor-' || i || '.example.com', '["ipmi", "redfish"]', true,
		        'group' || (i % 4), now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
		 FROM generate_series(1, 20) i`,
		`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default")
		 SELECT c, ht, it, 'impl-' || it, true
		 FROM generate_series(1, 20) c,
		      unnest(ARRAY['ipmi', 'redfish', 'idrac', 'ilo', 'manual-management']) ht,
		      unnest(ARRAY['boot', 'deploy', 'power', 'management']) it`,
		fmt.Sprintf(`INSERT INTO nodes (id, uuid, name, driver, conductor_group, reservation, instance_uuid,
		                   power_state, provision_state, maintenance, resource_class, created_at, updated_at)
		 SELECT i, md5(i::text)::uuid::text,
		        CASE WHEN i %% 10 = 0 THEN NULL ELSE 'node-' || i END,
		        (ARRAY['ipmi', 'redfish', 'idrac', 'ilo'])[1 + i %% 4],
		        'group' || (i %% 4),
		        CASE WHEN i %% 50 = 0 THEN 'conductor-' || (i %% 20 + 1) || '.example.com' END,
		        CASE WHEN i %% 3 = 0 THEN md5('i' || i)::uuid::text END,
		        CASE WHEN i %% 7 = 0 THEN 'power off' ELSE 'power on' END,
		        (ARRAY['active', 'available', 'manageable', 'deploying', 'clean wait'])[1 + i %% 5],
		        i %% 17 = 0, 'baremetal',
		        timestamp '2024-01-01 00:00:00' + i * interval '1 second',
		        timestamp '2024-06-01 00:00:00' + i * interval '1 millisecond'
		 FROM generate_series(1, %d) i`, n),
		`ANALYZE conductors, conductor_hardware_interfaces, nodes`)
}
