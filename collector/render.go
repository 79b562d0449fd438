package collector

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
	"sync"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The text exposition (what Prometheus negotiates: the handler does not
// offer OpenMetrics) is served from pre-rendered pieces, one per metric
// family, each sorted by family name as the registry sorts them:
//
//   - ironic_node_conductor_info, one series per node, written straight
//     from the topology by writeNodeFamily (nodetext.go) in client_golang's
//     bytes, with no dto.Metric or registry per node. Per node generation
//     (Topology.NodeGeneration) the nodes' order and the family's gzip chunk
//     are kept (about 4 and 27 bytes a node): Prometheus scrapes gzip, and
//     compressing the family on every scrape would cost, at 1M nodes, more
//     than the steady-state CPU target by itself. Its plain text (about 180
//     bytes a node, a third of the live heap target) is not kept: a plain
//     scrape writes it into the response as it goes;
//   - every other family of collectView, rendered once per view (topology
//     and refresh outcome), plain and gzip;
//   - what changes between scrapes of one view, rendered per scrape: the
//     families named in perScrapeFamilies (from collectPerScrape) and the
//     process-wide Gatherer's (build info, Go runtime, refresh histogram),
//     in stored deflate blocks for a gzip scrape (zchunk.go).
//
// Any other negotiated format (protobuf) takes promhttp's path.

// perScrapeFamilies are the families of collectView whose value depends on
// the scrape's clock, not only on the view: collectPerScrape emits them.
var perScrapeFamilies = map[string]bool{"ironic_exporter_data_age_seconds": true}

// piece is one metric family's exposition, plain and as a gzip chunk.
type piece struct {
	name  string
	plain []byte
	z     zchunk
}

// viewKey identifies what a view's rendering depends on. The topology is
// held weakly: the rendering kept until the next scrape must not keep a
// replaced topology, and its snapshot, alive beside the new one (at 1M
// nodes, about 300 MB of the live heap target).
type viewKey struct {
	topo        weak.Pointer[topology.Topology]
	lastSuccess time.Time
	err         string
	up          bool
}

func keyOf(v topology.View) viewKey {
	k := viewKey{topo: weak.Make(v.Topology), lastSuccess: v.LastSuccess, up: v.Up()}
	if v.Err != nil {
		k.err = v.Err.Error()
	}
	return k
}

// viewPieces is the rendering of one view, less its node family.
type viewPieces struct {
	key    viewKey
	pieces []*piece
	err    error // from gathering; the pieces hold what was gathered
}

// nodePieces is the node family of one node generation: its order (the
// nodes' order) and its gzip chunk, each made on first use.
type nodePieces struct {
	gen       uint64
	orderOnce sync.Once
	order     []int32
	mu        sync.Mutex
	z         *zchunk
	err       error
}

// rendered holds the latest view's pieces and the latest node generation's.
type rendered struct {
	mu    sync.Mutex
	view  *viewPieces
	nodes *nodePieces
	// fw compresses the views, one after the other. Kept (a megabyte):
	// with a compressor and a text buffer per render, the renders made
	// about a sixth of the sidecar's garbage at 100k nodes in make bench's
	// steady state, and the garbage paces the collections (the sidecar's
	// CPU target).
	fw *flate.Writer
}

// viewOf returns the pieces of v, rendering them when v is not the view
// rendered last.
func (h *handler) viewOf(v topology.View) *viewPieces {
	key := keyOf(v)
	h.rendered.mu.Lock()
	defer h.rendered.mu.Unlock()
	if vp := h.rendered.view; vp != nil && vp.key == key {
		return vp
	}
	vp := &viewPieces{key: key}
	reg := prometheus.NewRegistry()
	opts := h.opts.ExporterOptions
	opts.NodeInfo = false // see nodesOf
	reg.MustRegister(viewCollector{view: v, now: h.cache.Now(), opts: opts})
	mfs, err := reg.Gather()
	vp.err = err
	if h.rendered.fw == nil {
		h.rendered.fw = newFlate(flate.BestSpeed) // once per refresh: the steady-state CPU target
	}
	var text bytes.Buffer // each family's, in turn
	for _, mf := range mfs {
		if perScrapeFamilies[mf.GetName()] {
			continue
		}
		p, err := renderPiece(mf, h.rendered.fw, &text)
		if err != nil {
			vp.err = errors.Join(vp.err, err)
			continue
		}
		vp.pieces = append(vp.pieces, p)
	}
	h.rendered.view = vp
	return vp
}

// nodesOf returns the node family pieces of t's node generation.
func (h *handler) nodesOf(t *topology.Topology) *nodePieces {
	h.rendered.mu.Lock()
	defer h.rendered.mu.Unlock()
	if np := h.rendered.nodes; np != nil && np.gen == t.NodeGeneration {
		return np
	}
	np := &nodePieces{gen: t.NodeGeneration}
	h.rendered.nodes = np
	return np
}

// orderOf returns the node family's order, computing it from t on first
// use.
func (np *nodePieces) orderOf(t *topology.Topology) []int32 {
	np.orderOnce.Do(func() { np.order = nodeInfoOrder(t) })
	return np.order
}

// gzipped returns the node family as a gzip chunk, rendering it from t on
// first use. BestSpeed: at 1M nodes it compresses the family in about
// 1.2 s of CPU, the default level in about three times that, of a cold
// scrape whose target is 5 s; 28.7 bytes a node are sent instead of 27.
func (np *nodePieces) gzipped(t *topology.Topology) (*zchunk, error) {
	order := np.orderOf(t)
	np.mu.Lock()
	defer np.mu.Unlock()
	if np.z == nil && np.err == nil {
		z := newZwriter(newFlate(flate.BestSpeed))
		err := writeNodeFamily(z, t, order)
		c, ferr := z.finish()
		if np.err = errors.Join(err, ferr); np.err == nil {
			np.z = &c
		}
	}
	return np.z, np.err
}

// writeText writes the node family of t to w as plain text.
func (np *nodePieces) writeText(w io.Writer, t *topology.Topology) error {
	return writeNodeFamily(w, t, np.orderOf(t))
}

// renderPiece encodes one family as text (in b, reset first) and, when fw
// is not nil, as a gzip chunk compressed by fw.
func renderPiece(mf *dto.MetricFamily, fw *flate.Writer, b *bytes.Buffer) (*piece, error) {
	b.Reset()
	if _, err := expfmt.MetricFamilyToText(b, mf); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", mf.GetName(), err)
	}
	p := &piece{name: mf.GetName(), plain: bytes.Clone(b.Bytes())}
	if fw == nil {
		return p, nil
	}
	z := newZwriter(fw)
	_, _ = z.Write(p.plain) // a bytes.Buffer underneath: no error
	var err error
	p.z, err = z.finish()
	return p, err
}

// perScrapeCollector emits the families of a view that change with the
// scrape's clock.
type perScrapeCollector struct {
	view topology.View
	now  time.Time
}

func (c perScrapeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dataAgeDesc }
func (c perScrapeCollector) Collect(ch chan<- prometheus.Metric) {
	collectPerScrape(ch, c.view, c.now)
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (a q-value of 0 refuses it).
func acceptsGzip(r *http.Request) bool {
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

// servePrerendered writes the text exposition of v from its pieces.
func (h *handler) servePrerendered(w http.ResponseWriter, r *http.Request, v topology.View, format expfmt.Format) {
	vp := h.viewOf(v)
	errs := []error{vp.err}

	reg := prometheus.NewRegistry()
	reg.MustRegister(perScrapeCollector{view: v, now: h.cache.Now()})
	gatherers := prometheus.Gatherers{reg}
	if h.opts.Gatherer != nil {
		gatherers = append(gatherers, h.opts.Gatherer)
	}
	mfs, err := gatherers.Gather()
	errs = append(errs, err)
	gz := acceptsGzip(r)
	pieces := slices.Clone(vp.pieces)
	have := make(map[string]bool, len(pieces)+len(mfs)+1)
	for _, p := range pieces {
		have[p.name] = true
	}
	var text bytes.Buffer
	for _, mf := range mfs {
		if have[mf.GetName()] {
			errs = append(errs, fmt.Errorf("family %s gathered twice; the process-wide one dropped", mf.GetName()))
			continue
		}
		p, err := renderPiece(mf, nil, &text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if gz {
			p.z = storedChunk(p.plain)
		}
		pieces = append(pieces, p)
	}
	var np *nodePieces
	if h.opts.NodeInfo && v.Topology != nil {
		np = h.nodesOf(v.Topology)
		pieces = append(pieces, &piece{name: nodeInfoName})
	}
	slices.SortStableFunc(pieces, func(a, b *piece) int { return strings.Compare(a.name, b.name) })

	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", string(format))
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		g := newGzipStream(w)
		for _, p := range pieces {
			if p.name == nodeInfoName && np != nil {
				z, err := np.gzipped(v.Topology)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				g.chunk(z)
				continue
			}
			g.chunk(&p.z)
		}
		errs = append(errs, g.close())
	} else {
		for _, p := range pieces {
			var err error
			if p.name == nodeInfoName && np != nil {
				err = np.writeText(w, v.Topology)
			} else {
				_, err = w.Write(p.plain)
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		h.opts.Logger.Error("rendering /metrics", "err", err)
	}
}
