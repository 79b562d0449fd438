// Package exposition writes the Prometheus text format from pieces rendered
// ahead of time, byte for byte what promhttp writes for a registry (plain
// or gzip): without a registry or a dto.Metric per series (Families), and
// with a family compressed once per change spliced into every gzip response
// (gzip.go), for two figures of the performance contract, the steady-state
// CPU and the cold gzip scrape at 1M nodes (5 s). It knows no metric:
// package collector says what the families are, and checks the whole
// response against promhttp's (TestPrerenderedIsPromhttp).
package exposition

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Piece is one metric family's exposition: its plain text and, for a gzip
// response, its chunk; or a family written at each response (Stream).
type Piece struct {
	Name  string
	Plain []byte
	Z     Chunk
	// Stream, when not nil, writes the family instead of Plain and Z.
	Stream Stream
}

// Stream is a family too large to keep as plain text: written into each
// plain response as it goes, and kept only as a gzip chunk.
type Stream interface {
	// WriteText writes the family's plain text to w.
	WriteText(w io.Writer) error
	// Gzipped is the family's gzip chunk.
	Gzipped() *Chunk
}

// NewPiece is the piece of a family whose text is text (copied) and, when
// fw is not nil, its gzip chunk compressed by fw.
func NewPiece(name string, text []byte, fw *flate.Writer) *Piece {
	p := &Piece{Name: name, Plain: bytes.Clone(text)}
	if fw != nil {
		z := NewCompressor(fw)
		_, _ = z.Write(p.Plain)
		p.Z = z.Finish()
	}
	return p
}

// ScrapePiece is the piece of a family rendered for one response: its gzip
// chunk, when gz, is stored, not compressed (StoredChunk).
func ScrapePiece(name string, text []byte, gz bool) *Piece {
	p := NewPiece(name, text, nil)
	if gz {
		p.Z = StoredChunk(p.Plain)
	}
	return p
}

// Gathered adds the families of g to pieces, as ScrapePiece, except those
// whose name a piece already has (a process-wide family must not repeat
// one of the exporter's). The errors say what was dropped.
func Gathered(pieces []*Piece, g prometheus.Gatherer, gz bool) ([]*Piece, error) {
	mfs, err := g.Gather()
	errs := []error{err}
	have := make(map[string]bool, len(pieces))
	for _, p := range pieces {
		have[p.Name] = true
	}
	var text bytes.Buffer
	for _, mf := range mfs {
		if have[mf.GetName()] {
			errs = append(errs, fmt.Errorf("family %s gathered twice; the process-wide one dropped", mf.GetName()))
			continue
		}
		text.Reset()
		if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
			errs = append(errs, fmt.Errorf("encoding %s: %w", mf.GetName(), err))
			continue
		}
		pieces = append(pieces, ScrapePiece(mf.GetName(), text.Bytes(), gz))
	}
	return pieces, errors.Join(errs...)
}

// Write sorts pieces by name, as a registry sorts families (stable: pieces
// of one name keep their order), and writes them to w as the response's
// body with its headers: one gzip member spliced from their chunks when gz,
// plain text otherwise. format is the negotiated text format.
func Write(w http.ResponseWriter, format expfmt.Format, gz bool, pieces []*Piece) error {
	slices.SortStableFunc(pieces, func(a, b *Piece) int { return strings.Compare(a.Name, b.Name) })
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", string(format))
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		g := newGzipStream(w)
		for _, p := range pieces {
			if p.Stream != nil {
				g.chunk(p.Stream.Gzipped())
			} else {
				g.chunk(&p.Z)
			}
		}
		return g.close()
	}
	for _, p := range pieces {
		var err error
		if p.Stream != nil {
			err = p.Stream.WriteText(w)
		} else {
			_, err = w.Write(p.Plain)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// AcceptsGzip reports whether the request's Accept-Encoding allows gzip
// (a q-value of 0 refuses it).
func AcceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(name) != "*" {
			continue
		}
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		return q > 0
	}
	return false
}
