package novadb

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
)

// These tests run on SQLite files holding the columns the reader reads
// (MiniCellSchemaSQLite; Nova's real schema, on PostgreSQL and MariaDB, is
// read by conformance/nova, which also checks the views computed from the
// rows).

// fleet makes nova_api (cell0, cell1 by URL, cell2 by a template that the
// reader fills from connection) and the two cells, and returns the
// reader's Config.
func fleet(t *testing.T) (Config, string, string) {
	dir := t.TempDir()
	api, cell1, cell2 := filepath.Join(dir, "api.sqlite"), filepath.Join(dir, "cell1.sqlite"), filepath.Join(dir, "cell2.sqlite")
	testenv.ExecSQLite(t, api, MiniAPISchemaSQLite,
		`INSERT INTO cell_mappings VALUES (1, '`+nova.Cell0UUID+`', 'cell0', 'sqlite:///`+dir+`/missing.sqlite'),
		 (2, 'c1', 'cell1', 'sqlite:///`+cell1+`'), (3, 'c2', 'cell2', '{scheme}:///`+dir+`/cell2.sqlite')`)
	for _, c := range []string{cell1, cell2} {
		testenv.ExecSQLite(t, c, MiniCellSchemaSQLite)
	}
	testenv.ExecSQLite(t, cell1,
		`INSERT INTO services VALUES (1, 'c-1', 'nova-compute', 0, 0, 0, '2026-12-04 08:00:00', NULL, '2026-12-04 08:00:05.250000', 68),
		 (2, 'c-2', 'nova-compute', NULL, NULL, 0, '2026-12-04 08:00:00', NULL, NULL, 68),
		 (3, 'c-3', 'nova-compute', 0, 0, 3, '2026-12-04 08:00:00', NULL, NULL, 68),
		 (4, 'cond', 'nova-conductor', 0, 0, 0, '2026-12-04 08:00:00', NULL, NULL, 68)`,
		`INSERT INTO compute_nodes VALUES (1, 'n1', 'c-1', 'n1', 'ironic', 0, '2026-12-04 07:00:00', NULL, NULL),
		 (2, 'n2', 'c-2', 'n2', 'ironic', 2, '2026-12-04 07:00:00', NULL, '2026-12-04 07:30:00'),
		 (3, 'kvm', 'c-1', 'kvm', 'QEMU', 0, '2026-12-04 07:00:00', NULL, NULL)`,
		`INSERT INTO instances VALUES (1, 'i1', 'c-1', 'n1', 0, '2026-12-04 07:00:00', NULL, NULL),
		 (2, 'i2', 'c-1', 'n1', 2, '2026-12-04 07:00:00', NULL, '2026-12-04 07:10:00'),
		 (3, 'i3', 'other', 'x', 0, '2026-12-04 07:00:00', NULL, NULL),
		 (4, 'i4', 'c-9', 'n9', 0, '2026-12-04 07:00:00', NULL, NULL)`)
	return Config{APIConnection: "sqlite:///" + api, Connection: "sqlite:///" + cell1,
		Now: func() time.Time { return time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC) }}, cell1, cell2
}

func TestRead(t *testing.T) {
	cfg, cell1, _ := fleet(t)
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	snap, err := r.Read(context.Background(), []string{"c-9"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Cells) != 2 || snap.Cells[0].Cell.Name != "cell1" || snap.Cells[1].Cell.Name != "cell2" {
		t.Fatalf("cells: %+v", snap.Cells)
	}
	if c := snap.Cells[1]; c.Err != nil || !strings.HasSuffix(c.Database, "cell2.sqlite") || c.Cell.UUID != "c2" {
		t.Errorf("cell2 (template filled from the connection): %+v", c)
	}
	c := snap.Cells[0]
	if c.Err != nil || !c.Reread.ComputeNodes || !c.Reread.Instances {
		t.Fatalf("cell1: %+v", c)
	}
	sv := c.Cell.Services
	if len(sv) != 2 || sv[0].Host != "c-1" || sv[0].Disabled || sv[0].Version != 68 ||
		!sv[0].LastSeenUp.Equal(time.Date(2026, 12, 4, 8, 0, 5, 250000000, time.UTC)) ||
		!sv[1].Disabled || sv[1].ForcedDown || !sv[1].LastSeenUp.IsZero() {
		t.Errorf("services (deleted and other binaries left out, NULL disabled read as disabled): %+v", sv)
	}
	if cn := c.Cell.ComputeNodes; len(cn) != 1 || cn[0].UUID.String() != "n1" || !slices.Equal(c.Cell.SoftDeletedHosts, []string{"c-2"}) {
		t.Errorf("compute nodes (the live ironic ones; the soft-deleted ones' hosts apart): %+v, %q", cn, c.Cell.SoftDeletedHosts)
	}
	if in := c.Cell.Instances; len(in) != 2 || in[0].UUID.String() != "i1" || in[1].UUID.String() != "i4" {
		t.Errorf("instances (live, of the ironic hosts and of c-9): %+v", in)
	}

	// unchanged: the probes vouch for the rows (their latest time is an
	// hour before the read)
	known := func(last *Snapshot) *Known { return &Known{Last: last, Window: 2 * time.Second} }
	again, err := r.Read(context.Background(), []string{"c-9"}, known(snap))
	if err != nil || again.Cells[0].Reread.ComputeNodes || again.Cells[0].Reread.Instances {
		t.Fatalf("second read: %v %+v", err, again.Cells[0].Reread)
	}
	gen := snap.Cells[0].Generation
	if gen.ComputeNodes == 0 || gen.Instances == 0 || gen.ComputeNodes == gen.Instances || gen == snap.Cells[1].Generation {
		t.Errorf("first read's generations are not distinct: cell1 %+v, cell2 %+v", gen, snap.Cells[1].Generation)
	}
	// the reader keeps no rows: without a known read, every table is read
	if none, err := r.Read(context.Background(), []string{"c-9"}, nil); err != nil || !none.Cells[0].Reread.ComputeNodes || !none.Cells[0].Reread.Instances {
		t.Errorf("a read with no known one reused rows: %v %+v", err, none.Cells[0].Reread)
	}
	if again.Cells[0].Generation != gen {
		t.Errorf("rows reused, generations %+v, want the first read's %+v", again.Cells[0].Generation, gen)
	}
	// a soft delete (deleted_at set, updated_at kept, as oslo.db's does)
	testenv.ExecSQLite(t, cell1, `UPDATE instances SET deleted = id, deleted_at = '2026-12-04 08:59:59.500000' WHERE uuid = 'i1'`)
	third, err := r.Read(context.Background(), []string{"c-9"}, known(again))
	if err != nil || third.Cells[0].Reread.ComputeNodes || !third.Cells[0].Reread.Instances || len(third.Cells[0].Cell.Instances) != 1 {
		t.Fatalf("after a soft delete: %v %+v", err, third.Cells[0])
	}
	if g := third.Cells[0].Generation; g.ComputeNodes != gen.ComputeNodes || g.Instances == gen.Instances {
		t.Errorf("instances read again: generations %+v, want a new one for instances alone (was %+v)", g, gen)
	}
	// within the window of the latest write: no reuse next time
	fourth, _ := r.Read(context.Background(), []string{"c-9"}, known(third))
	if !fourth.Cells[0].Reread.Instances {
		t.Errorf("a probe 0.5 s after the latest write vouches (window 2s): %+v", fourth.Cells[0].Reread)
	}
}

func TestCellFailureKeepsLastRows(t *testing.T) {
	cfg, cell1, _ := fleet(t)
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	first, err := r.Read(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	testenv.ExecSQLite(t, cell1, `DROP TABLE services`)
	snap, err := r.Read(context.Background(), nil, &Known{Last: first, Window: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Cells[0]
	if c.Err == nil || !strings.Contains(c.Err.Error(), "reading cell cell1 c1") || !strings.Contains(c.Err.Error(), "reading services") {
		t.Fatalf("error: %v", c.Err)
	}
	if c.ReadAt != first.Cells[0].ReadAt || len(c.Cell.Services) != 2 {
		t.Errorf("the last good rows are kept: %+v", c)
	}
	if snap.Cells[1].Err != nil {
		t.Errorf("cell2 fails with cell1: %v", snap.Cells[1].Err)
	}
}

func TestAPIFailure(t *testing.T) {
	r, err := Open(Config{APIConnection: "postgresql://nova:s3cret-pw@127.0.0.1:1/nova_api?connect_timeout=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	_, err = r.Read(context.Background(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "reading nova_api") || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error: %v", err)
	}
	if _, err := Open(Config{APIConnection: "oracle://x"}); err == nil || !strings.Contains(err.Error(), "nova_api connection") {
		t.Errorf("bad DSN: %v", err)
	}
}

// TestReadOddValues: values that SQLite keeps in columns of another type
// (a disabled 'maybe', a version 'x68', a last_seen_up 'soon', a compute
// node's deleted 'abc') are warnings naming their rows, read as NULL is (an
// odd disabled as disabled, an odd deleted as deleted, as SQLite's
// "= 0" filters have them), never a failed read; the compute nodes'
// warnings stay while their rows are reused, counted by table
// (RowWarnings, the metric's values).
func TestReadOddValues(t *testing.T) {
	cfg, cell1, _ := fleet(t)
	testenv.ExecSQLite(t, cell1,
		`INSERT INTO services VALUES (5, 'c-5', 'nova-compute', 'maybe', 'yes', 0, '2026-12-04 08:00:00', NULL, 'soon', 'x68')`,
		`INSERT INTO compute_nodes VALUES (4, 'n4', 'c-5', 'n4', 'ironic', 'abc', '2026-12-04 07:00:00', NULL, NULL)`)
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	var last *Snapshot
	for i := range 2 {
		snap, err := r.Read(context.Background(), nil, &Known{Last: last})
		if err != nil {
			t.Fatal(err)
		}
		last = snap
		c := snap.Cells[0]
		if c.Err != nil {
			t.Fatalf("read %d: an odd value failed the cell: %v", i, c.Err)
		}
		var sv *nova.Service
		for j := range c.Cell.Services {
			if c.Cell.Services[j].Host == "c-5" {
				sv = &c.Cell.Services[j]
			}
		}
		if sv == nil || !sv.Disabled || sv.ForcedDown || sv.Version != 0 || !sv.LastSeenUp.IsZero() {
			t.Errorf("read %d: the odd service: %+v", i, sv)
		}
		if cn := c.Cell.ComputeNodes; len(cn) != 1 || cn[0].UUID.String() != "n1" || !slices.Contains(c.Cell.SoftDeletedHosts, "c-5") {
			t.Errorf("read %d: compute nodes %+v, soft-deleted hosts %q: n4's odd deleted reads as deleted", i, cn, c.Cell.SoftDeletedHosts)
		}
		want := []string{
			`4 value(s) in Nova's services that their column's type cannot hold, read as NULL; first: id 5 (host "c-5") disabled "maybe"`,
			`1 value(s) in Nova's compute_nodes that their column's type cannot hold, read as NULL; first: uuid "n4" deleted "abc"`,
		}
		if !slices.Equal(c.Warnings, want) {
			t.Errorf("read %d (compute nodes reread %v): warnings\n%q\nwant\n%q", i, c.Reread.ComputeNodes, c.Warnings, want)
		}
		wantCounts := []nova.RowWarning{{Table: "services", Reason: nova.ReasonBadValue, Rows: 4}, {Table: "compute_nodes", Reason: nova.ReasonBadValue, Rows: 1}}
		if !slices.Equal(c.RowWarnings, wantCounts) {
			t.Errorf("read %d: row warnings %+v, want %+v", i, c.RowWarnings, wantCounts)
		}
		if i == 1 && c.Reread.ComputeNodes {
			t.Errorf("the second read reread the compute nodes: the reuse is not tested")
		}
	}
}
