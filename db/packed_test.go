package db

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"
)

// Packed node reads: an experiment of issue 12 (item 2), kept for
// BenchmarkNodeRead, not adopted. The server packs each node row into one
// bytea, so that lib/pq hands over one value per row instead of one per
// column (convTslice and database/sql's conversion per column were most of
// the client's work). Measured on PostgreSQL 15, the packing costs the
// backend about what it saves the client: the total CPU stays the same and
// the wall time grows, the backend becoming the slower side (see the
// benchmark's client/server CPU figures).

// nodePacking is how the server packs a node row.
type nodePacking uint8

const (
	// packRecord: the whole row as one record_send(ROW(...)): its column
	// count, then per column its type OID, its length (-1 for NULL) and
	// its binary value, all big-endian (PostgreSQL's record_send,
	// src/backend/utils/adt/rowtypes.c).
	packRecord nodePacking = iota
	// packTextArray: the columns that are not text as pgQueries.nodes
	// reads them, then the text columns, in their order, as one text[] in
	// binary, array_send(ARRAY[...]): its number of dimensions (1), a
	// has-NULLs flag, the element type OID, the dimension's length and
	// lower bound, then per element its length (-1 for NULL) and bytes
	// (PostgreSQL's array_send, src/backend/utils/adt/arrayfuncs.c).
	packTextArray
)

// PostgreSQL's type OIDs (pg_type.dat) of the columns record_send packs.
const (
	pgOIDBool      = 16
	pgOIDInt8      = 20
	pgOIDInt2      = 21
	pgOIDInt4      = 23
	pgOIDText      = 25
	pgOIDTimestamp = 1114
)

// packedNodesQuery words the packed nodes statement from nodeColumns;
// withoutOwner reads NULL for owner and lessee.
func packedNodesQuery(p nodePacking, withoutOwner bool) string {
	w := wording{text: func(c string) string { return c + "::text" }, null: "NULL::text"}
	if p == packRecord {
		w.time = func(c string) string { return c + "::timestamp" }
	} else {
		w.time = func(c string) string { return "timestamp_send(" + c + ")" }
	}
	var plain, text []string
	for _, c := range nodeColumns {
		if p == packTextArray && c.kind == columnText {
			text = append(text, w.word(c, withoutOwner))
		} else {
			plain = append(plain, w.word(c, withoutOwner))
		}
	}
	if p == packRecord {
		return "SELECT record_send(ROW(" + strings.Join(plain, ", ") + "))\nFROM nodes\nORDER BY id"
	}
	return "SELECT " + strings.Join(plain, ", ") + ",\n       array_send(ARRAY[" + strings.Join(text, ", ") + "])\nFROM nodes\nORDER BY id"
}

// readPackedNodes is readNodes for a packed statement (prepared, so that
// lib/pq asks for the bytea in binary and hands over a slice of its
// buffer).
func (d *DB) readPackedNodes(ctx context.Context, watch func(context.Context) func() bool, tx *sqlx.Tx, p nodePacking, withoutOwner bool, count int64, w *warner) ([]Node, error) {
	dec := newNodeDecoder(int(count))
	var (
		r      nodeRow
		packed sql.RawBytes
	)
	targets := r.targets(true)
	scan := func(rows *sql.Rows) error {
		if err := rows.Scan(&packed); err != nil {
			return err
		}
		return r.unpackRecord(packed, targets)
	}
	if p == packTextArray {
		var cols []any
		for i, c := range nodeColumns {
			if c.kind != columnText {
				cols = append(cols, targets[i])
			}
		}
		cols = append(cols, &packed)
		scan = func(rows *sql.Rows) error {
			if err := rows.Scan(cols...); err != nil {
				return err
			}
			return r.unpackTextArray(packed)
		}
	}
	err := d.readRows(ctx, watch, tx, "reading nodes", packedNodesQuery(p, withoutOwner), true, func(rows *sql.Rows) error {
		if err := scan(rows); err != nil {
			return err
		}
		dec.add(&r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	w.addNodes(dec.warnings())
	return dec.out, nil
}

// unpackRecord reads one record_send row (packRecord) into the fields
// targets (r.targets(true)) point to, each value as lib/pq would read the
// column in binary; the text stays a view of b.
func (r *nodeRow) unpackRecord(b []byte, targets []any) error {
	if len(b) < 4 || int64(int32(binary.BigEndian.Uint32(b))) != int64(len(targets)) {
		return fmt.Errorf("packed node row: not a record of %d columns", len(targets))
	}
	b = b[4:]
	for i, t := range targets {
		if len(b) < 8 {
			return fmt.Errorf("packed node row: cut short before column %s", nodeColumns[i].name)
		}
		typ, n := binary.BigEndian.Uint32(b), int32(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
		var v []byte // nil: NULL
		if n >= 0 {
			if int64(n) > int64(len(b)) {
				return fmt.Errorf("packed node row: column %s cut short", nodeColumns[i].name)
			}
			v, b = b[:n:n], b[n:]
		}
		ok := true
		switch t := t.(type) {
		case *sql.RawBytes:
			ok = typ == pgOIDText
			*t = v
		case *pgBinaryTime:
			ok = typ == pgOIDTimestamp
			if *t = (pgBinaryTime{}); v != nil {
				(*dbTime)(t).pgBinary(v)
			}
		case *anyBool:
			ok = typ == pgOIDBool && (v == nil || len(v) == 1)
			*t = anyBool(v != nil && v[0] != 0)
		case *int64:
			*t, ok = pgInt(typ, v)
		case *sql.NullInt64:
			t.Int64, t.Valid = pgInt(typ, v)
			ok = t.Valid || v == nil
		}
		if !ok {
			return fmt.Errorf("packed node row: column %s of type OID %d (%d bytes) cannot be read", nodeColumns[i].name, typ, n)
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("packed node row: %d bytes after the last column", len(b))
	}
	return nil
}

// unpackTextArray reads the text columns of a node row from array_send's
// text[] (packTextArray); the text stays a view of b.
func (r *nodeRow) unpackTextArray(b []byte) error {
	if len(b) < 20 || binary.BigEndian.Uint32(b) != 1 || binary.BigEndian.Uint32(b[8:]) != pgOIDText ||
		binary.BigEndian.Uint32(b[12:]) != nodeTextCols {
		return fmt.Errorf("packed node text: not a text[] of %d elements", nodeTextCols)
	}
	b = b[20:]
	for i := range r.text {
		if len(b) < 4 {
			return fmt.Errorf("packed node text: cut short before column %s", nodeTextNames[i])
		}
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		r.text[i] = nil
		if n >= 0 {
			if int64(n) > int64(len(b)) {
				return fmt.Errorf("packed node text: column %s cut short", nodeTextNames[i])
			}
			r.text[i], b = b[:n:n], b[n:]
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("packed node text: %d bytes after the last column", len(b))
	}
	return nil
}

// pgInt reads an int2, int4 or int8 in binary; false for NULL or another
// type.
func pgInt(typ uint32, v []byte) (int64, bool) {
	switch {
	case typ == pgOIDInt4 && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case typ == pgOIDInt8 && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v)), true
	case typ == pgOIDInt2 && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v))), true
	}
	return 0, false
}

// packedSnapshot is (*DB).Snapshot with the nodes read packed: the same
// steps on the same connection, watched the same way, without the retries
// and fallbacks (SQL_ASCII, schemas without owner). Only for
// BenchmarkNodeRead and the tests below.
func packedSnapshot(ctx context.Context, d *DB, p nodePacking) (_ *Snapshot, err error) {
	conn, err := d.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	watch := noWatch
	_ = conn.Raw(func(dc any) error {
		if w, ok := dc.(watchedConn); ok {
			watch = w.watch
		}
		return nil
	})
	tx, err := conn.BeginTxx(ctx, d.dialect.txOptions())
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	snap := &Snapshot{Backend: d.dialect.backend(), NodeRead: NodeReadFull}
	w := &warner{}
	q := d.dialect.queries()
	if snap.Conductors, err = d.readConductors(ctx, watch, tx, q.conductors, w); err != nil {
		return nil, err
	}
	if err := d.readHardwareTypes(ctx, watch, tx, q.hardwareTypes, snap.Conductors, w); err != nil {
		return nil, err
	}
	if snap.NodeProbe, err = d.probeNodes(ctx, watch, tx, q.probe); err != nil {
		return nil, err
	}
	if snap.Nodes, err = d.readPackedNodes(ctx, watch, tx, p, false, snap.NodeProbe.Count, w); err != nil {
		return nil, err
	}
	return d.finishSnapshot(ctx, watch, tx, snap, w)
}

// TestPackedSnapshot: the benchmark's packed reads decode what Snapshot
// does, so that its figures compare like with like.
func TestPackedSnapshot(t *testing.T) {
	needPG(t)
	conn := testDBConn(t, testDBName)
	resetTables(t, conn)
	fillBenchNodes(t, conn, 1000)
	t.Cleanup(func() { resetTables(t, conn) })
	ctx := context.Background()
	d := openTest(t, testDSN, Options{})
	want, err := d.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []nodePacking{packRecord, packTextArray} {
		got, err := packedSnapshot(ctx, d, p)
		if err != nil {
			t.Fatalf("packing %d: %v", p, err)
		}
		if len(got.Nodes) != 1000 {
			t.Fatalf("packing %d: %d nodes", p, len(got.Nodes))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("packing %d: snapshot differs (-Snapshot +packed):\n%s", p, diff)
		}
	}
}

// TestPackedNodeRows: the packed reads of TestPostgresBinaryNodes' awkward
// rows (empty text and NULL, +-infinity, BC, year 9999, microseconds) are
// the text read's, warnings included; without owner, owner and lessee are
// NULL.
func TestPackedNodeRows(t *testing.T) {
	needPG(t)
	admin := testDBConn(t, testDBName)
	resetTables(t, admin)
	t.Cleanup(func() { resetTables(t, admin) })
	fillAwkwardNodes(t, admin)
	d := openTest(t, testDSN, Options{})
	readWith := func(f func(ctx context.Context, tx *sqlx.Tx, w *warner) ([]Node, error)) nodesRead {
		t.Helper()
		return readInTx(t, d, f)
	}
	want := readWith(func(ctx context.Context, tx *sqlx.Tx, w *warner) ([]Node, error) {
		return d.readNodes(ctx, noWatch, tx, SQLNodes, false, NodeProbe{}, w)
	})
	if len(want.nodes) != 4 || len(want.counts) != 2 {
		t.Fatalf("text read: %d nodes, warnings %v", len(want.nodes), want.counts)
	}
	for _, p := range []nodePacking{packRecord, packTextArray} {
		got := readWith(func(ctx context.Context, tx *sqlx.Tx, w *warner) ([]Node, error) {
			return d.readPackedNodes(ctx, noWatch, tx, p, false, 0, w)
		})
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(nodesRead{})); diff != "" {
			t.Errorf("packing %d differs from the text read (-text +packed):\n%s", p, diff)
		}
		noOwner := readWith(func(ctx context.Context, tx *sqlx.Tx, w *warner) ([]Node, error) {
			return d.readPackedNodes(ctx, noWatch, tx, p, true, 0, w)
		})
		if len(noOwner.nodes) != 4 || noOwner.nodes[0].Owner != nil || noOwner.nodes[0].Lessee != nil {
			t.Errorf("packing %d without owner: %+v", p, noOwner.nodes)
		}
	}
}
