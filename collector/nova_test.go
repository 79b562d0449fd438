package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
)

// TestNovaPiecesArePromhttp: the Nova families the text exposition splices
// (plain and gzip) are byte for byte what client_golang writes for the
// same collector.
func TestNovaPiecesArePromhttp(t *testing.T) {
	c, _ := novaBenchFleet(nil, 2000, 7)
	c.Refresh(context.Background())
	nc := NewNovaCollector(c)
	reg := prometheus.NewRegistry()
	reg.MustRegister(nc)
	for round := range 2 {
		if round == 1 {
			// A refresh that keeps the views: the node piece is kept, the
			// others rendered again; the whole still client_golang's.
			node := func() *exposition.Piece {
				for _, p := range nc.Pieces() {
					if p.Name == nodeNovaComputeFamily.Name {
						return p
					}
				}
				return nil
			}
			before := node()
			c.Refresh(context.Background())
			if got := node(); got == nil || got != before {
				t.Error("the node family was rendered again over the same claims")
			}
		}
		comparePieces(t, reg, nc)
	}
}

func comparePieces(t *testing.T, reg *prometheus.Registry, nc *NovaCollector) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	for _, gz := range []bool{false, true} {
		rec := httptest.NewRecorder()
		if err := exposition.Write(rec, format, gz, nc.Pieces()); err != nil {
			t.Fatal(err)
		}
		got := rec.Body.Bytes()
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(want.String(), string(got)); diff != "" {
			t.Errorf("gzip %v: pieces differ from client_golang (-want +got):\n%.3000s", gz, diff)
		}
	}
	if p1, p2 := nc.Pieces(), nc.Pieces(); p1[0] != p2[0] {
		t.Error("the pieces of one answer are rendered again")
	}
}
