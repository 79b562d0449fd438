package db

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/bench"
)

// BenchmarkNodeRead compares, on the same PostgreSQL table of n nodes, the
// floor of a full read (COPY of SQLNodes' rows in text form, what psql's
// \copy receives) with the snapshot's node read through lib/pq (the
// production driver) and through pgx's database/sql driver, the decode
// (db/read.go) being the same for both.
func BenchmarkNodeRead(b *testing.B) {
	needPG(b)
	for _, n := range bench.Rounds(100_000) { // alternated rounds for make bench
		conn := testDBConn(b, testDBName)
		resetTables(b, conn)
		fillBenchNodes(b, conn, n)
		b.Cleanup(func() { resetTables(b, conn) })
		ctx := context.Background()

		b.Run(fmt.Sprintf("copy/nodes=%d", n), func(b *testing.B) {
			pc, err := pgx.Connect(ctx, adminDSNFor(testDBName))
			if err != nil {
				b.Fatal(err)
			}
			defer pc.Close(ctx)
			for b.Loop() {
				tag, err := pc.PgConn().CopyTo(ctx, io.Discard, "COPY ("+SQLNodes+") TO STDOUT")
				if err != nil || tag.RowsAffected() != int64(n) {
					b.Fatalf("COPY: %v, %d rows", err, tag.RowsAffected())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
		lib := openTest(b, testDSN, Options{})
		pgxDB := &DB{db: sqlx.NewDb(stdlib.OpenDB(*mustPgxConfig(b)), "pgx"), dialect: lib.dialect, opts: lib.opts}
		b.Cleanup(func() { pgxDB.Close() })
		for _, drv := range []struct {
			name string
			d    *DB
		}{{"libpq", lib}, {"pgx", pgxDB}} {
			b.Run(fmt.Sprintf("%s/nodes=%d", drv.name, n), func(b *testing.B) {
				if s, err := drv.d.Snapshot(ctx); err != nil || len(s.Nodes) != n {
					b.Fatalf("warm-up: %v", err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := drv.d.Snapshot(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
			})
		}
	}
}

func mustPgxConfig(b *testing.B) *pgx.ConnConfig {
	b.Helper()
	cfg, err := pgx.ParseConfig(adminDSNFor(testDBName))
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
