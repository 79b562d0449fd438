package db

import (
	"context"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// TestSnapshotWithoutOwnerColumns: a schema older than nodes.lessee
// (Ironic 15.0) or nodes.owner (12.1) still snapshots, every node with
// owner and lessee NULL, from the first snapshot on and in the next ones.
func TestSnapshotWithoutOwnerColumns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		for _, col := range []string{"lessee", "owner"} {
			t.Run(col, func(t *testing.T) {
				loadFixtureOn(t, b)
				conn := b.admin(t)
				b.exec(t, conn, `ALTER TABLE nodes RENAME COLUMN `+col+` TO `+col+`_away`)
				t.Cleanup(func() { b.exec(t, conn, `ALTER TABLE nodes RENAME COLUMN `+col+`_away TO `+col) })
				d := openTest(t, b.dsn, dbconn.Options{})
				for i := range 2 {
					got, err := d.Snapshot(context.Background())
					if err != nil {
						t.Fatalf("snapshot %d without nodes.%s: %v", i, col, err)
					}
					if len(got.Nodes) != 3 {
						t.Fatalf("snapshot %d: %d nodes, want 3", i, len(got.Nodes))
					}
					for _, n := range got.Nodes {
						if n.Owner != nil || n.Lessee != nil {
							t.Errorf("snapshot %d: node %s owner %v lessee %v, want both NULL", i, n.UUID, n.Owner, n.Lessee)
						}
					}
				}
				if got := d.ownerCols.Load(); got != ownerColsMissing {
					t.Errorf("ownerCols %d, want %d (missing)", got, ownerColsMissing)
				}
			})
		}
	})
}

// TestSnapshotOwnerColumnsPresent: on the current schema the first
// snapshot settles that owner and lessee are read.
func TestSnapshotOwnerColumnsPresent(t *testing.T) {
	loadFixture(t)
	d := openTest(t, testDSN, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.ownerCols.Load() != ownerColsPresent || got.Nodes[2].Lessee == nil || *got.Nodes[2].Lessee != "Projekt-ö" {
		t.Errorf("ownerCols %d, node 10 lessee %v", d.ownerCols.Load(), got.Nodes[2].Lessee)
	}
}
