package db

import (
	"context"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// TestSnapshotSchemaGenerations: a schema without a column the exporter
// reads (nodes.owner or lessee before Ironic 15.0, shard before 21.4,
// parent_node before 22.0) still snapshots, from the first snapshot on and
// in the next ones, the missing columns read as NULL and the ones it has
// read as they are; the generation read is the newest the schema has.
func TestSnapshotSchemaGenerations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		cases := []struct {
			name         string
			alter, undo  string
			want         schemaGen
			owner, shard bool // read as set
		}{
			// The test schema is python3-ironic 21.4's: shard, no parent_node.
			{name: "21.4", want: genShard, owner: true, shard: true},
			{name: "parent_node", alter: `ALTER TABLE nodes ADD COLUMN parent_node varchar(36)`,
				undo: `ALTER TABLE nodes DROP COLUMN parent_node`, want: genParentNode, owner: true, shard: true},
			{name: "health", alter: `ALTER TABLE nodes ADD COLUMN parent_node varchar(36);ALTER TABLE nodes ADD COLUMN health varchar(32)`,
				undo: `ALTER TABLE nodes DROP COLUMN health;ALTER TABLE nodes DROP COLUMN parent_node`, want: genHealth, owner: true, shard: true},
			{name: "no shard", alter: `ALTER TABLE nodes RENAME COLUMN shard TO shard_away`,
				undo: `ALTER TABLE nodes RENAME COLUMN shard_away TO shard`, want: genLessee, owner: true},
			{name: "no lessee", alter: `ALTER TABLE nodes RENAME COLUMN lessee TO lessee_away`,
				undo: `ALTER TABLE nodes RENAME COLUMN lessee_away TO lessee`, want: genRocky},
			{name: "no owner", alter: `ALTER TABLE nodes RENAME COLUMN owner TO owner_away`,
				undo: `ALTER TABLE nodes RENAME COLUMN owner_away TO owner`, want: genRocky},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				loadFixtureOn(t, b)
				conn := b.admin(t)
				b.exec(t, conn, `UPDATE nodes SET shard = 'S1' WHERE id = 10`)
				if c.alter != "" {
					b.exec(t, conn, strings.Split(c.alter, ";")...)
					t.Cleanup(func() { b.exec(t, conn, strings.Split(c.undo, ";")...) })
				}
				if c.want >= genParentNode {
					b.exec(t, conn, `UPDATE nodes SET parent_node = 'P' WHERE id = 10`)
				}
				if c.want == genHealth {
					b.exec(t, conn, `UPDATE nodes SET health = 'Critical' WHERE id = 10`)
				}
				d := openTest(t, b.dsn, dbconn.Options{})
				for i := range 2 {
					got, err := d.Snapshot(context.Background())
					if err != nil {
						t.Fatalf("snapshot %d: %v", i, err)
					}
					if len(got.Nodes) != 3 {
						t.Fatalf("snapshot %d: %d nodes, want 3", i, len(got.Nodes))
					}
					n := got.Nodes[2]
					if (n.Lessee != nil) != c.owner || (n.Shard != nil) != c.shard || (n.ParentNode != nil) != (c.want >= genParentNode) {
						t.Errorf("snapshot %d: node %s lessee %v shard %v parent_node %v", i, n.UUID, n.Lessee, n.Shard, n.ParentNode)
					}
					if (n.Health != nil) != (c.want == genHealth) || n.Health != nil && *n.Health != "Critical" {
						t.Errorf("snapshot %d: node %s health %v", i, n.UUID, n.Health)
					}
					if c.owner && *n.Lessee != "Projekt-ö" || c.shard && *n.Shard != "S1" {
						t.Errorf("snapshot %d: node %s lessee %q shard %q", i, n.UUID, *n.Lessee, *n.Shard)
					}
				}
				if got := d.gen.Load(); got != int32(c.want) {
					t.Errorf("generation %d, want %d", got, c.want)
				}
			})
		}
	})
}
