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
//   - the families of collectShared, written by textFamilies (text.go)
//     once per view (topology and refresh outcome), plain and gzip;
//   - what changes between scrapes of one view, rendered per scrape: the
//     families of collectPerScrape and the process-wide Gatherer's (build
//     info, Go runtime, refresh histogram), in stored deflate blocks for a
//     gzip scrape (zchunk.go).
//
// Any other negotiated format (protobuf) takes promhttp's path, with
// viewCollector.

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
}

// nodePieces is the node family of one node generation: its order (the
// nodes' order) and its gzip chunk, each made on first use.
type nodePieces struct {
	gen       uint64
	orderOnce sync.Once
	order     []int32
	zOnce     sync.Once
	z         zchunk
}

// rendered holds the latest view's pieces and the latest node generation's.
type rendered struct {
	mu    sync.Mutex
	view  *viewPieces
	nodes *nodePieces
	// fw compresses the views, one after the other. Kept: a compressor is
	// 1.2 MB, more than the garbage of the view it would compress, and the
	// garbage paces the collections (the sidecar's CPU target).
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
	tf := textFamilies{}
	collectShared(tf.add, v)
	if h.rendered.fw == nil {
		h.rendered.fw = newFlate(flate.BestSpeed) // once per refresh: the steady-state CPU target
	}
	tf.each(func(name string, text []byte) { vp.pieces = append(vp.pieces, newPiece(name, text, h.rendered.fw)) })
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
func (np *nodePieces) gzipped(t *topology.Topology) *zchunk {
	order := np.orderOf(t)
	np.zOnce.Do(func() {
		z := newZwriter(newFlate(flate.BestSpeed))
		_ = writeNodeFamily(z, t, order) // into memory: no error
		np.z = z.finish()
	})
	return &np.z
}

// writeText writes the node family of t to w as plain text.
func (np *nodePieces) writeText(w io.Writer, t *topology.Topology) error {
	return writeNodeFamily(w, t, np.orderOf(t))
}

// newPiece is the piece of a family whose text is text (copied) and, when
// fw is not nil, its gzip chunk compressed by fw.
func newPiece(name string, text []byte, fw *flate.Writer) *piece {
	p := &piece{name: name, plain: bytes.Clone(text)}
	if fw != nil {
		z := newZwriter(fw)
		_, _ = z.Write(p.plain)
		p.z = z.finish()
	}
	return p
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
	var errs []error

	gz := acceptsGzip(r)
	pieces := slices.Clone(vp.pieces)
	add := func(name string, text []byte) {
		p := newPiece(name, text, nil)
		if gz {
			p.z = storedChunk(p.plain)
		}
		pieces = append(pieces, p)
	}
	tf := textFamilies{}
	collectPerScrape(tf.add, v, h.cache.Now())
	tf.each(add)
	if h.opts.Gatherer != nil {
		mfs, err := h.opts.Gatherer.Gather()
		errs = append(errs, err)
		have := make(map[string]bool, len(pieces))
		for _, p := range pieces {
			have[p.name] = true
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
			add(mf.GetName(), text.Bytes())
		}
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
				g.chunk(np.gzipped(v.Topology))
			} else {
				g.chunk(&p.z)
			}
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
