package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
)

// The Nova side the end-to-end test's exporter reads, so that the panels
// of the fleet dashboard's Nova row have data: nova_api and one cell as
// SQLite files holding the columns the exporter reads (Nova's real schema,
// on PostgreSQL and MariaDB, is conformance/nova's business):
//
//	ironic-compute-0  up                         compute records of nodes 1-6, an instance on 1
//	ironic-compute-1  up, disabled               compute records of nodes 7-8, an instance on 7
//	ironic-compute-2  down (heartbeat 1 h old)   compute record of node 9
//
// Ironic's nodes 1 and 7 are active with those instances. The other nodes
// have no compute record. Without a computes file the exporter assumes the
// computes' settings (no [ironic] option); the disabled and the down
// compute still have views of their own, which overlap the up one's
// (node_claimed_twice). No instance is on the down compute, so that
// IronicNovaComputeDown stays quiet.
// novaServiceVersion is services.version as Nova 31.0 writes it.
const novaServiceVersion = 68

// nodeUUID is the uuid loadFixture gives the i-th node (from 1).
func nodeUUID(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

// instanceUUID is the uuid of the instance on the i-th node.
func instanceUUID(i int) string { return fmt.Sprintf("%08x-0000-4000-9000-%012x", i, i) }

// loadNovaFixture writes nova_api and cell1 under dir, gives Ironic's
// nodes (in ironic, loaded by loadFixture) their instances, and returns
// the DSN of nova_api, as --nova.dsn takes it.
func loadNovaFixture(t *testing.T, dir string, ironic *sql.DB) string {
	t.Helper()
	api, cell := filepath.Join(dir, "nova_api.sqlite"), filepath.Join(dir, "nova_cell1.sqlite")
	now := time.Now().UTC()
	ts := func(t time.Time) string { return "'" + t.Format("2006-01-02 15:04:05.000000") + "'" }
	testenv.ExecSQLite(t, api, novadb.MiniAPISchemaSQLite,
		`INSERT INTO cell_mappings VALUES (1, '`+nova.Cell0UUID+`', 'cell0', 'sqlite:///`+filepath.Join(dir, "nova_cell0.sqlite")+`'),
		 (2, '5b4a1a52-0000-4000-8000-000000000001', 'cell1', 'sqlite:///`+cell+`')`)

	created := ts(now.Add(-24 * time.Hour))
	var nodes, instances []string
	compute := func(i int, host string) {
		nodes = append(nodes, fmt.Sprintf("(%d, '%s', '%s', '%s', 'ironic', 0, %s, NULL, NULL)", i, nodeUUID(i), host, nodeUUID(i), created))
	}
	for i := 1; i <= 9; i++ {
		switch {
		case i <= 6:
			compute(i, "ironic-compute-0")
		case i <= 8:
			compute(i, "ironic-compute-1")
		default:
			compute(i, "ironic-compute-2")
		}
	}
	for n, host := range map[int]string{1: "ironic-compute-0", 7: "ironic-compute-1"} {
		instances = append(instances, fmt.Sprintf("(%d, '%s', '%s', '%s', 0, %s, NULL, NULL)", n, instanceUUID(n), host, nodeUUID(n), created))
		if _, err := ironic.Exec(`UPDATE nodes SET instance_uuid = $1, provision_state = 'active' WHERE uuid = $2`, instanceUUID(n), nodeUUID(n)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.ExecSQLite(t, cell, novadb.MiniCellSchemaSQLite,
		fmt.Sprintf(`INSERT INTO services VALUES
		 (1, 'ironic-compute-0', 'nova-compute', 0, 0, 0, %[1]s, NULL, %[2]s, %[4]d),
		 (2, 'ironic-compute-1', 'nova-compute', 1, 0, 0, %[1]s, NULL, %[2]s, %[4]d),
		 (3, 'ironic-compute-2', 'nova-compute', 0, 0, 0, %[1]s, NULL, %[3]s, %[4]d),
		 (4, 'nova-conductor-0', 'nova-conductor', 0, 0, 0, %[1]s, NULL, %[2]s, %[4]d)`,
			created, ts(now), ts(now.Add(-time.Hour)), novaServiceVersion),
		`INSERT INTO compute_nodes VALUES `+strings.Join(nodes, ",\n"),
		`INSERT INTO instances VALUES `+strings.Join(instances, ",\n"))
	return "sqlite:///" + api
}
