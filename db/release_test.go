package db

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// TestSnapshotReleaseData reads what tells the Ironic release, on the real
// schema of each backend: conductors.version per conductor and the schema's
// alembic revision; a database without alembic_version still snapshots,
// with no revision and no warning.
func TestSnapshotReleaseData(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *testBackend) {
		loadFixtureOn(t, b)
		conn := b.admin(t)
		b.exec(t, conn, `UPDATE conductors SET version = '1.3' WHERE id = 1`,
			`UPDATE conductors SET version = '1.10' WHERE id = 7`)
		d := openTest(t, b.dsn, dbconn.Options{})
		got, err := d.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got.SchemaRevision == "" || got.SchemaRevision != schemaHead(b.kind) {
			t.Errorf("schema revision %q, want %q", got.SchemaRevision, schemaHead(b.kind))
		}
		versions := map[int64]string{}
		for _, c := range got.Conductors {
			versions[c.ID] = c.Version
		}
		if want := map[int64]string{1: "1.3", 2: "", 3: "", 4: "", 7: "1.10"}; fmt.Sprint(versions) != fmt.Sprint(want) {
			t.Errorf("conductor versions %v, want %v", versions, want)
		}

		b.exec(t, conn, `ALTER TABLE alembic_version RENAME TO alembic_version_away`)
		t.Cleanup(func() { b.exec(t, conn, `ALTER TABLE alembic_version_away RENAME TO alembic_version`) })
		got, err = d.Snapshot(context.Background())
		if err != nil {
			t.Fatalf("snapshot without alembic_version: %v", err)
		}
		if got.SchemaRevision != "" || len(got.Conductors) != 5 || len(got.Nodes) != 3 {
			t.Errorf("without alembic_version: revision %q, %d conductors, %d nodes", got.SchemaRevision, len(got.Conductors), len(got.Nodes))
		}
		for _, w := range got.Warnings {
			if strings.Contains(w, "alembic_version") {
				t.Errorf("a missing alembic_version is not worth a warning: %s", w)
			}
		}
	})
}

// TestSnapshotAlembicNotGranted: a role granted only the three tables (what
// the operators guide asked for before release detection) still gets its
// snapshot, with a warning that says what to grant.
func TestSnapshotAlembicNotGranted(t *testing.T) {
	needPG(t)
	loadFixture(t)
	admin := testDBConn(t, testDBName)
	role := fmt.Sprintf("ice_noalembic_%d", os.Getpid())
	mustExec(t, admin, `CREATE ROLE `+role+` LOGIN`,
		`GRANT SELECT ON conductors, conductor_hardware_interfaces, nodes TO `+role)
	t.Cleanup(func() {
		mustExec(t, admin, `REVOKE ALL ON conductors, conductor_hardware_interfaces, nodes FROM `+role, `DROP ROLE `+role)
	})
	dsn := strings.Replace(testDSN, "postgres@", role+"@", 1)
	if dsn == testDSN {
		t.Fatalf("cannot put the role into %s", dbconn.Redact(testDSN))
	}
	d := openTest(t, dsn, dbconn.Options{})
	got, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.SchemaRevision != "" || len(got.Nodes) != 3 {
		t.Errorf("revision %q, %d nodes", got.SchemaRevision, len(got.Nodes))
	}
	found := false
	for _, w := range got.Warnings {
		found = found || strings.Contains(w, "grant SELECT on it")
	}
	if !found {
		t.Errorf("no warning about alembic_version in %q", got.Warnings)
	}
}
