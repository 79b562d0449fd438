package db

import (
	stdcmp "cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/bench"
)

// BenchmarkNodeRead compares, on the same PostgreSQL table of n nodes, the
// floor of a full read (COPY of SQLNodes' rows in text form, what psql's
// \copy receives) with a full snapshot through lib/pq (the production
// driver), through pgx's database/sql driver (the decode, db/read.go, being
// the same for both), through lib/pq with each node row packed by the
// server into one value (packedSnapshot: libpq-packed, record_send of the
// row; libpq-textarray, array_send of its text columns) and through pgx
// natively (pgxNativeSnapshot: the same statements on pgconn, the node rows
// decoded by the same nodeDecoder from the raw values of each row). Every
// case reaches the server the same way (TCP, no TLS: lib/pq's default
// sslmode=prefer would otherwise encrypt its rows alone).
//
// The sub-benchmarks run one after the other; "alternated" runs one of each
// per round, in a rotating order, and reports each subject's time as a
// ratio to the COPY of the same round (median, min and max over the
// rounds): the figure to read on a shared machine. It also reports the CPU
// time of each read, the benchmark process's (client) and the test
// database's PostgreSQL backends' (server), as medians in milliseconds and
// as ratios of their sum to the COPY's: work moved to the server does not
// vanish.
func BenchmarkNodeRead(b *testing.B) {
	needPG(b)
	for _, n := range bench.Rounds(100_000) { // alternated rounds for make bench
		conn := testDBConn(b, testDBName)
		resetTables(b, conn)
		fillBenchNodes(b, conn, n)
		b.Cleanup(func() { resetTables(b, conn) })
		ctx := context.Background()

		subjects := nodeReadSubjects(ctx, b, n)
		for _, s := range subjects {
			b.Run(fmt.Sprintf("%s/nodes=%d", s.name, n), func(b *testing.B) {
				if err := s.run(); err != nil {
					b.Fatalf("warm-up: %v", err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := s.run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
			})
		}
		b.Run(fmt.Sprintf("alternated/nodes=%d", n), func(b *testing.B) {
			meter := newCPUMeter(ctx, b)
			took := make([][]time.Duration, len(subjects))
			cpu := make([][]readCPU, len(subjects))
			round := 0
			for b.Loop() {
				for i := range subjects {
					k := (i + round) % len(subjects)
					wall, used, err := meter.measure(ctx, subjects[k].run)
					if err != nil {
						b.Fatal(err)
					}
					took[k] = append(took[k], wall)
					cpu[k] = append(cpu[k], used)
				}
				round++
			}
			median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
			for k, s := range subjects {
				client, server := make([]float64, round), make([]float64, round)
				for r := range round {
					client[r] = cpu[k][r].client.Seconds() * 1e3
					server[r] = cpu[k][r].server.Seconds() * 1e3
				}
				b.ReportMetric(median(client), s.name+"-client-cpu-ms")
				b.ReportMetric(median(server), s.name+"-server-cpu-ms")
				if k == 0 {
					continue
				}
				ratios, cpuRatios := make([]float64, round), make([]float64, round)
				for r := range ratios {
					ratios[r] = float64(took[k][r]) / float64(took[0][r])
					cpuRatios[r] = float64(cpu[k][r].total()) / float64(cpu[0][r].total())
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], s.name+"/copy")
				b.ReportMetric(ratios[0], s.name+"/copy-min")
				b.ReportMetric(ratios[len(ratios)-1], s.name+"/copy-max")
				slices.Sort(cpuRatios)
				b.ReportMetric(cpuRatios[len(cpuRatios)/2], s.name+"/copy-cpu")
				b.ReportMetric(cpuRatios[0], s.name+"/copy-cpu-min")
				b.ReportMetric(cpuRatios[len(cpuRatios)-1], s.name+"/copy-cpu-max")
			}
		})
	}
}

// TestPgxNativeSnapshot: the benchmark's pgx-native read decodes what
// Snapshot does, so that its figures compare like with like.
func TestPgxNativeSnapshot(t *testing.T) {
	needPG(t)
	conn := testDBConn(t, testDBName)
	resetTables(t, conn)
	fillBenchNodes(t, conn, 1000)
	t.Cleanup(func() { resetTables(t, conn) })
	ctx := context.Background()
	want, err := openTest(t, testDSN, Options{}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.Connect(ctx, adminDSNFor(testDBName))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	got, err := pgxNativeSnapshot(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 1000 {
		t.Fatalf("%d nodes", len(got.Nodes))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pgx-native snapshot differs (-Snapshot +pgx-native):\n%s", diff)
	}
}

// readCPU is the CPU time one read took: the benchmark process's (client)
// and that of the PostgreSQL backends of the test database (server).
type readCPU struct{ client, server time.Duration }

func (c readCPU) total() time.Duration { return c.client + c.server }

// cpuMeter measures a read's wall time and CPU time, the server's from the
// backends pg_stat_activity lists for the test database (not those of the
// other databases a shared server runs), each read from /proc.
type cpuMeter struct{ conn *pgx.Conn }

func newCPUMeter(ctx context.Context, b *testing.B) *cpuMeter {
	b.Helper()
	conn, err := pgx.Connect(ctx, adminDSNFor(testDBName))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(ctx) })
	return &cpuMeter{conn: conn}
}

// backends are the CPU times of the test database's backends, but the
// meter's own.
func (m *cpuMeter) backends(ctx context.Context) (map[uint32]time.Duration, error) {
	rows, err := m.conn.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]time.Duration, len(pids))
	for _, pid := range pids {
		if out[uint32(pid)], err = threadCPU(uint32(pid)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// measure runs read once, from a collected heap, so that no read pays for
// collecting another's garbage; a backend that started during the read
// counts from zero.
func (m *cpuMeter) measure(ctx context.Context, read func() error) (time.Duration, readCPU, error) {
	var used readCPU
	runtime.GC()
	before, err := m.backends(ctx)
	if err != nil {
		return 0, used, err
	}
	self, err := processCPU()
	if err != nil {
		return 0, used, err
	}
	start := time.Now()
	if err := read(); err != nil {
		return 0, used, err
	}
	wall := time.Since(start)
	if used.client, err = processCPU(); err != nil {
		return 0, used, err
	}
	used.client -= self
	after, err := m.backends(ctx)
	if err != nil {
		return 0, used, err
	}
	for pid, t := range after {
		used.server += t - before[pid]
	}
	return wall, used, nil
}

// nodeReadSubject is one way of reading n nodes; the first is the floor.
type nodeReadSubject struct {
	name string
	run  func() error
}

func nodeReadSubjects(ctx context.Context, b *testing.B, n int) []nodeReadSubject {
	b.Helper()
	plainDSN := adminDSNFor(testDBName) // sslmode=disable
	copyConn, err := pgx.Connect(ctx, plainDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { copyConn.Close(ctx) })
	nativeConn, err := pgx.Connect(ctx, plainDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nativeConn.Close(ctx) })
	lib := openTest(b, testDSN+"?sslmode=disable", Options{})
	cfg, err := pgx.ParseConfig(plainDSN)
	if err != nil {
		b.Fatal(err)
	}
	pgxDB := &DB{db: sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx"), dialect: lib.dialect, opts: lib.opts}
	b.Cleanup(func() { pgxDB.Close() })

	snapshot := func(d *DB) func() error {
		return func() error {
			s, err := d.Snapshot(ctx)
			if err == nil && len(s.Nodes) != n {
				err = fmt.Errorf("%d nodes, want %d", len(s.Nodes), n)
			}
			return err
		}
	}
	packed := func(p nodePacking) func() error {
		return func() error {
			s, err := packedSnapshot(ctx, lib, p)
			if err == nil && len(s.Nodes) != n {
				err = fmt.Errorf("%d nodes, want %d", len(s.Nodes), n)
			}
			return err
		}
	}
	return []nodeReadSubject{
		{"copy", func() error {
			tag, err := copyConn.PgConn().CopyTo(ctx, io.Discard, "COPY ("+SQLNodes+") TO STDOUT")
			if err == nil && tag.RowsAffected() != int64(n) {
				err = fmt.Errorf("COPY: %d rows, want %d", tag.RowsAffected(), n)
			}
			return err
		}},
		{"libpq", snapshot(lib)},
		{"libpq-packed", packed(packRecord)},
		{"libpq-textarray", packed(packTextArray)},
		{"pgx", snapshot(pgxDB)},
		{"pgx-native", func() error {
			s, err := pgxNativeSnapshot(ctx, nativeConn)
			if err == nil && len(s.Nodes) != n {
				err = fmt.Errorf("%d nodes, want %d", len(s.Nodes), n)
			}
			return err
		}},
	}
}

// pgxNativeSnapshot is what a snapshot would cost on pgx without
// database/sql: the statements of (*DB).snapshot in one read-only
// REPEATABLE READ transaction, the conductors and hardware types scanned by
// pgx, the nodes (SQLNodes) read with pgconn, whose rows are raw values in
// its buffer: text columns as text, the others in binary, decoded by
// nodeDecoder as readNodes does. Only for BenchmarkNodeRead: the exporter's
// driver is lib/pq (see watchdog.go).
func pgxNativeSnapshot(ctx context.Context, conn *pgx.Conn) (_ *Snapshot, err error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	snap := &Snapshot{Backend: BackendPostgreSQL, NodeRead: NodeReadFull}

	rows, err := tx.Query(ctx, SQLConductors)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			c                Conductor
			host, group, ver pgtype.Text
			drivers          pgtype.Text
			online           pgtype.Bool
			created, updated pgtype.Timestamp
		)
		if err := rows.Scan(&c.ID, &host, &group, &online, &drivers, &created, &updated, &ver); err != nil {
			return nil, err
		}
		c.Hostname, c.ConductorGroup, c.Online = host.String, group.String, online.Bool
		if drivers.Valid {
			if err := json.Unmarshal([]byte(drivers.String), &c.Drivers); err != nil {
				return nil, err
			}
		}
		c.CreatedAt, c.UpdatedAt, c.Version = created.Time, updated.Time, ver.String
		snap.Conductors = append(snap.Conductors, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, SQLHardwareTypes)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			id int64
			ht string
		)
		if err := rows.Scan(&id, &ht); err != nil {
			return nil, err
		}
		if i, ok := slices.BinarySearchFunc(snap.Conductors, id, func(c Conductor, id int64) int { return stdcmp.Compare(c.ID, id) }); ok {
			snap.Conductors[i].HardwareTypes = append(snap.Conductors[i].HardwareTypes, ht)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var maxUpdated, maxCreated pgtype.Timestamp
	if err := tx.QueryRow(ctx, SQLNodeProbe).Scan(&snap.NodeProbe.Count, &snap.NodeProbe.MaxID, &maxUpdated, &snap.NodeProbe.Reserved, &maxCreated); err != nil {
		return nil, err
	}
	snap.NodeProbe.MaxUpdatedAt, snap.NodeProbe.MaxCreatedAt = maxUpdated.Time, maxCreated.Time

	// SQLNodes' columns: id, 8 text, maintenance, resource_class,
	// created_at, updated_at, conductor_affinity, 3 text.
	const text, bin = pgtype.TextFormatCode, pgtype.BinaryFormatCode
	formats := []int16{bin, text, text, text, text, text, text, text, text, bin, text, bin, bin, bin, text, text, text}
	textCol := [...]int{1: colUUID, 2: colName, 3: colDriver, 4: colGroup, 5: colReservation, 6: colInstance,
		7: colPower, 8: colProvision, 10: colResourceClass, 14: colTarget, 15: colOwner, 16: colLessee}
	dec := newNodeDecoder(int(snap.NodeProbe.Count))
	rr := tx.Conn().PgConn().ExecParams(ctx, SQLNodes, nil, nil, nil, formats)
	var r nodeRow
	for rr.NextRow() {
		v := rr.Values()
		r.id, _ = pgBinaryInt(v[0])
		for i, c := range textCol {
			if formats[i] == text {
				r.text[c] = v[i]
			}
		}
		r.maintenance = anyBool(len(v[9]) == 1 && v[9][0] != 0)
		r.created.t, r.updated.t = time.Time{}, time.Time{}
		if v[11] != nil {
			r.created.pgBinary(v[11])
		}
		if v[12] != nil {
			r.updated.pgBinary(v[12])
		}
		r.affinity.Int64, r.affinity.Valid = pgBinaryInt(v[13])
		dec.add(&r)
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	snap.Nodes = dec.out
	w := &warner{}
	w.addNodes(dec.warnings())

	var revs []string
	rows, err = tx.Query(ctx, SQLSchemaRevision)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var rev string
		if err := rows.Scan(&rev); err != nil {
			return nil, err
		}
		revs = append(revs, rev)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	snap.SchemaRevision = strings.Join(revs, ",")
	snap.Warnings, snap.WarningCounts = w.result()
	return snap, nil
}

// pgBinaryInt reads an int2, int4 or int8 in binary; false for NULL.
func pgBinaryInt(b []byte) (int64, bool) {
	switch len(b) {
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b))), true
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), true
	case 8:
		return int64(binary.BigEndian.Uint64(b)), true
	}
	return 0, false
}
