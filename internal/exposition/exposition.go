// Package exposition writes the Prometheus text format from pieces rendered
// ahead of time, byte for byte what promhttp writes for a registry (plain
// or gzip): without a registry or a dto.Metric per series (Families), and
// with a family compressed once per change spliced into every gzip response
// (gzip.go), for two rows of docs/performance.md: the steady-state CPU and
// the cold gzip scrape. It knows no metric:
// package collector says what the families are, and checks the whole
// response against promhttp's (TestPrerenderedIsPromhttp).
package exposition

import (
	"bytes"
	"cmp"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
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

// Family is one metric family as the text writer needs it.
type Family struct {
	Name, Help string
	// Labels are the label names, in name order (the exposition's): the
	// series' label values are given in this order.
	Labels []string
	// Type is prometheus.CounterValue or prometheus.GaugeValue.
	Type prometheus.ValueType
}

// Families collects series and writes them as a registry's Gather and
// expfmt's text encoder would (TestFamiliesIsClientGolang holds the two
// side by side): families by name, none empty; series by label values;
// label pairs by name. Without a registry, for the steady-state CPU row.
type Families map[*Family][]series

type series struct {
	labels []string
	v      float64
}

// Add adds one series of f: its value and its label values, in the order of
// f.Labels. It keeps labels.
func (tf Families) Add(f *Family, v float64, labels ...string) {
	tf[f] = append(tf[f], series{labels, v})
}

// Each calls fn with each family's name and text, in name order; text is
// reused once fn returns.
func (tf Families) Each(fn func(name string, text []byte)) {
	var b []byte
	for _, f := range slices.SortedFunc(maps.Keys(tf), func(a, b *Family) int { return cmp.Compare(a.Name, b.Name) }) {
		ss := tf[f]
		slices.SortFunc(ss, func(a, b series) int { return slices.Compare(a.labels, b.labels) })
		b = AppendHead(b[:0], f)
		for _, s := range ss {
			b = appendSeries(b, f, s.v, s.labels)
		}
		fn(f.Name, b)
	}
}

// appendSeries appends one series line of f: its name, its label pairs
// (labels in the order of f.Labels) and v, as expfmt writes them.
func appendSeries(b []byte, f *Family, v float64, labels []string) []byte {
	b = append(b, f.Name...)
	for i, name := range f.Labels {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		b = append(b, sep)
		b = append(b, name...)
		b = append(b, `="`...)
		b = AppendLabelValue(b, labels[i])
		b = append(b, '"')
	}
	if len(f.Labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = AppendFloat(b, v)
	return append(b, '\n')
}

// SeriesWriter writes one family in the order its series are given, as
// expfmt writes them, through a buffer of about Flush bytes: what the
// per-node families (a series per node, nearly all of /metrics on a large
// fleet) are written with, straight from their source, without a series
// kept for each. The caller gives the series in the registry's order.
type SeriesWriter struct {
	w   io.Writer
	f   *Family
	b   []byte
	err error
}

// SeriesFlush is how many bytes a SeriesWriter buffers before it writes
// them out, each write a chunk of the response and a write(2): a plain
// scrape holds 512 kB of a per-node family at a time, not the family, at
// most --web.max-renders of them at once.
const SeriesFlush = 512 << 10

// NewSeriesWriter returns a writer of f to w; its HELP and TYPE are
// written with the first series (nothing without series, as a registry
// gathers no empty family).
func NewSeriesWriter(w io.Writer, f *Family) *SeriesWriter {
	return &SeriesWriter{w: w, f: f}
}

// Series writes one series of f: v and its label values, in the order of
// f.Labels.
func (s *SeriesWriter) Series(v float64, labels ...string) {
	if s.err != nil {
		return
	}
	if s.b == nil {
		s.b = AppendHead(make([]byte, 0, SeriesFlush+1024), s.f)
	}
	s.b = appendSeries(s.b, s.f, v, labels)
	if len(s.b) >= SeriesFlush {
		_, s.err = s.w.Write(s.b)
		s.b = s.b[:0]
	}
}

// Close writes what is buffered and returns the first write error.
func (s *SeriesWriter) Close() error {
	if s.err == nil && len(s.b) > 0 {
		_, s.err = s.w.Write(s.b)
	}
	return s.err
}

// AppendHead appends f's HELP and TYPE lines as expfmt writes them.
func AppendHead(b []byte, f *Family) []byte {
	b = append(b, "# HELP "+f.Name+" "...)
	b = append(b, helpEscaper.Replace(f.Help)...)
	b = append(b, "\n# TYPE "+f.Name...)
	if f.Type == prometheus.CounterValue {
		return append(b, " counter\n"...)
	}
	return append(b, " gauge\n"...)
}

// AppendFloat appends v as expfmt writes a sample value.
func AppendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, "-1"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// helpEscaper escapes a HELP text as expfmt does.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// needsEscape marks the bytes expfmt escapes in a label value.
var needsEscape = [256]bool{'\\': true, '"': true, '\n': true}

// AppendLabelValue appends s escaped as expfmt escapes a label value:
// \ as \\, " as \", newline as \n. s must be valid UTF-8, as client_golang
// requires of a label value.
func AppendLabelValue(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, '\\', c)
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}
