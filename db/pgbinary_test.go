package db

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// TestPostgresBinaryNodes reads the same awkward rows with the text query
// (SQLNodes, lib/pq's text results) and with pgQueries.nodes (textsend and
// timestamp_send, prepared, in binary): the nodes and their warnings must
// be the same, byte for byte and to the microsecond.
func TestPostgresBinaryNodes(t *testing.T) {
	needPG(t)
	admin := testDBConn(t, testDBName)
	resetTables(t, admin)
	t.Cleanup(func() { resetTables(t, admin) })
	// The newest schema: python3-ironic 21.4's has no parent_node, nor
	// health.
	mustExec(t, admin, `ALTER TABLE nodes ADD COLUMN parent_node varchar(36)`, `ALTER TABLE nodes ADD COLUMN health varchar(32)`)
	t.Cleanup(func() {
		mustExec(t, admin, `ALTER TABLE nodes DROP COLUMN parent_node`, `ALTER TABLE nodes DROP COLUMN health`)
	})
	fillAwkwardNodes(t, admin)
	mustExec(t, admin, `UPDATE nodes SET shard = 'Shard-ß', parent_node = 'parent-ü', health = 'Critical', fault = 'power failure'
		WHERE id = (SELECT min(id) FROM nodes)`)

	d := openTest(t, testDSN, dbconn.Options{})
	read := func(query string, binary bool) ([]*Node, []string, []WarningCount) {
		t.Helper()
		r := readInTx(t, d, func(s *dbconn.Session, w *warner) ([]*Node, error) {
			return d.readNodes(s, query, binary, NodeProbe{}, w)
		})
		return r.nodes, r.lines, r.counts
	}
	textNodes, textLines, textCounts := read(SQLNodes, false)
	binNodes, binLines, binCounts := read(pgQueries.nodes[schemaGens-1], true)
	if len(textNodes) != 4 {
		t.Fatalf("%d nodes", len(textNodes))
	}
	if diff := cmp.Diff(textNodes, binNodes); diff != "" {
		t.Errorf("binary read differs from the text read (-text +binary):\n%s", diff)
	}
	if diff := cmp.Diff(textLines, binLines); diff != "" {
		t.Errorf("warnings differ (-text +binary):\n%s", diff)
	}
	if diff := cmp.Diff(textCounts, binCounts); diff != "" {
		t.Errorf("warning counts differ (-text +binary):\n%s", diff)
	}
	// The values themselves, not only their agreement.
	n := binNodes
	if n[0].Health == nil || *n[0].Health != "Critical" || n[0].Fault == nil || *n[0].Fault != "power failure" {
		t.Errorf("health %v, fault %v; want Critical, power failure", n[0].Health, n[0].Fault)
	}
	if n[0].Name == nil || *n[0].Name != "" || n[0].ResourceClass == nil || *n[0].ResourceClass != "" || n[0].Reservation != nil {
		t.Errorf("empty text and NULL: %+v", n[0])
	}
	if want := time.Date(2024, 2, 29, 23, 59, 59, 999999000, time.UTC); n[0].CreatedAt.Time() != want {
		t.Errorf("created_at %v, want %v", n[0].CreatedAt, want)
	}
	if want := time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC); n[1].CreatedAt.Time() != want || !n[1].UpdatedAt.IsZero() {
		t.Errorf("before PostgreSQL's epoch: created_at %v, updated_at %v", n[1].CreatedAt, n[1].UpdatedAt)
	}
	if n[1].Name == nil || *n[1].Name != "ünïcødé ☃" || n[1].ConductorGroup != "" {
		t.Errorf("node 2: %+v", n[1])
	}
	if !n[2].CreatedAt.IsZero() || !n[2].UpdatedAt.IsZero() || !n[2].HasConductorAffinity || n[2].ConductorAffinity != -5 {
		t.Errorf("infinity: %+v", n[2])
	}
	if n[3].CreatedAt.Time().Year() != -43 || n[3].UpdatedAt.Time().Nanosecond() != 500000000 || n[3].ConductorAffinity != 2147483647 {
		t.Errorf("BC and year 9999: %v, %v", n[3].CreatedAt, n[3].UpdatedAt)
	}
	wantCounts := []WarningCount{{tableNodes, ReasonBadTimestamp, 1}, {tableNodes, ReasonNull, 1}}
	if diff := cmp.Diff(wantCounts, binCounts); diff != "" {
		t.Errorf("warning counts (-want +got):\n%s", diff)
	}
	if len(binLines) != 2 || !strings.Contains(binLines[0], `node u3 (id 3): created_at "infinity", updated_at "-infinity"`) {
		t.Errorf("warnings: %q", binLines)
	}
}

// fillAwkwardNodes fills nodes with four awkward rows: empty text and NULL
// (conductor_group too, its NOT NULL dropped until the test ends), non-ASCII
// text, +-infinity, BC and year 9999 timestamps, microseconds either side
// of PostgreSQL's epoch, the extremes of conductor_affinity.
func fillAwkwardNodes(t *testing.T, admin *sql.DB) {
	t.Helper()
	mustExec(t, admin,
		`ALTER TABLE nodes ALTER COLUMN conductor_group DROP NOT NULL`,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
		 SELECT i, 'c' || i, '[]', true, '', now(), now() FROM unnest(ARRAY[7, -5, 2147483647]) i`,
		`INSERT INTO nodes (id, uuid, name, driver, conductor_group, reservation, instance_uuid, power_state,
		        provision_state, maintenance, resource_class, created_at, updated_at, conductor_affinity,
		        target_provision_state, owner, lessee) VALUES
		 (1, 'u1', '', 'ipmi', '', NULL, NULL, 'power on', 'active', true, '', '2024-02-29 23:59:59.999999',
		  '2000-01-01 00:00:00', 7, 'deploying', 'p1', 'l1'),
		 (2, 'u2', 'ünïcødé ☃', 'redfish', NULL, 'c1', 'i2', NULL, NULL, false, NULL, '1999-12-31 23:59:59.000001',
		  NULL, NULL, NULL, NULL, NULL),
		 (3, 'u3', 'n3', 'ipmi', 'g', NULL, NULL, NULL, NULL, NULL, 'baremetal', 'infinity', '-infinity',
		  -5, NULL, '', ''),
		 (4, 'u4', repeat('x', 255), 'ipmi', 'g', NULL, NULL, NULL, NULL, false, 'baremetal', '0044-03-15 12:00:00 BC',
		  '9999-12-31 23:59:59.5', 2147483647, NULL, NULL, NULL)`)
	t.Cleanup(func() {
		mustExec(t, admin, `DELETE FROM nodes`, `ALTER TABLE nodes ALTER COLUMN conductor_group SET NOT NULL`)
	})
}

// TestPostgresSQLASCIINodes: in a SQL_ASCII database whose only text that
// is not UTF-8 is in nodes, the binary nodes query (textsend) is refused
// as the text one would be, and the snapshot reads the raw bytes instead,
// with a warning.
func TestPostgresSQLASCIINodes(t *testing.T) {
	needPG(t)
	name := testDBName + "_ascii"
	mustExec(t, tzAdmin, `CREATE DATABASE `+name+` ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
	t.Cleanup(func() { mustExec(t, tzAdmin, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	conn, err := sql.Open("postgres", adminDSNFor(name))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, testenv.MiniSchemaPostgreSQL...)
	mustExec(t, conn,
		`INSERT INTO conductors (hostname, conductor_group, online, drivers, created_at, updated_at)
			VALUES ('c1', '', true, '["ipmi"]', '2024-01-01 00:00:00', '2024-01-01 00:00:01')`,
		`INSERT INTO conductor_hardware_interfaces VALUES (1, 'ipmi')`,
		`INSERT INTO nodes (uuid, name, driver, conductor_group, created_at, updated_at, lessee)
			VALUES ('11111111-1111-4111-8111-111111111111', E'n\xe91', 'ipmi', '', '2024-01-02 03:04:05.000006', NULL, E'l\xff')`)
	d := openTest(t, adminURL+"/"+name+"?sslmode=disable", dbconn.Options{})
	s, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !d.rawText.Load() {
		t.Errorf("the snapshot did not switch to raw text")
	}
	if len(s.Nodes) != 1 || *s.Nodes[0].Name != "n\uFFFD1" || *s.Nodes[0].Lessee != "l\uFFFD" ||
		s.Nodes[0].CreatedAt.Time() != time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC) {
		t.Errorf("nodes: %+v", s.Nodes)
	}
	want := []WarningCount{{tableNodes, ReasonNotUTF8, 1}}
	if diff := cmp.Diff(want, s.WarningCounts); diff != "" {
		t.Errorf("warning counts (-want +got):\n%s", diff)
	}
}

// nodesRead is what a node read in a test gives: the nodes and the
// warnings.
type nodesRead struct {
	nodes  []*Node
	lines  []string
	counts []WarningCount
}

// readInTx runs read in a transaction of d, rolled back after it.
func readInTx(t testing.TB, d *DB, read func(s *dbconn.Session, w *warner) ([]*Node, error)) nodesRead {
	t.Helper()
	s, err := d.Begin(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.End(false)
	w := &warner{}
	nodes, err := read(s, w)
	if err != nil {
		t.Fatal(err)
	}
	lines, counts := w.result()
	return nodesRead{nodes, lines, counts}
}
