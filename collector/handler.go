package collector

import (
	"compress/flate"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// HandlerOptions configures the /metrics handler.
type HandlerOptions struct {
	ExporterOptions
	// Gatherer adds the process-wide metrics (build info, Go runtime, the
	// cache's refresh histogram) to every scrape. May be nil.
	Gatherer prometheus.Gatherer
	// Nova, when set, adds Nova's families to every scrape.
	Nova *NovaCollector
	// Logger receives encoding errors. Default discards.
	Logger *slog.Logger
}

// scrapeTimeoutOffset is subtracted from Prometheus' scrape timeout header
// to leave time for encoding.
const scrapeTimeoutOffset = 500 * time.Millisecond

// NewHandler returns the /metrics handler. Each scrape takes the cache's
// view within the scrape's deadline (the X-Prometheus-Scrape-Timeout-Seconds
// header, less scrapeTimeoutOffset) and writes it: the text format from the
// pieces kept per view and node generation (servePrerendered), any other format
// through a registry holding a viewCollector.
func NewHandler(cache *topology.Cache, opts HandlerOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cache: cache, opts: opts}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if timeout, ok := scrapeTimeout(r, scrapeTimeoutOffset); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		h.serveView(ctx, w, r, cache.Get(ctx))
	})
}

// handler renders views of one cache; it keeps the pre-rendered pieces of
// the latest view and node generation (rendered).
type handler struct {
	cache    *topology.Cache
	opts     HandlerOptions
	rendered rendered
}

// serveView writes the exposition of v: the text format from pre-rendered
// pieces, any other format (protobuf) through promhttp.
func (h *handler) serveView(ctx context.Context, w http.ResponseWriter, r *http.Request, v topology.View) {
	if format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...); format.FormatType() == expfmt.TypeTextPlain {
		h.servePrerendered(ctx, w, r, v, format)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(viewCollector{view: v, now: h.cache.Now(), opts: h.opts.ExporterOptions})
	if h.opts.Nova != nil {
		reg.MustRegister(h.opts.Nova)
	}
	gatherers := prometheus.Gatherers{reg}
	if h.opts.Gatherer != nil {
		gatherers = append(gatherers, h.opts.Gatherer)
	}
	promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(h.opts.Logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}).ServeHTTP(w, r)
}

// scrapeTimeout reads Prometheus' scrape timeout header, less offset.
func scrapeTimeout(r *http.Request, offset time.Duration) (time.Duration, bool) {
	v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds")
	if v == "" {
		return 0, false
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || !(secs > 0 && secs <= 3600) { // NaN fails both
		return 0, false
	}
	d := time.Duration(secs * float64(time.Second))
	if d > offset {
		d -= offset
	}
	return d, true
}

// The text exposition (what Prometheus negotiates: the handler does not
// offer OpenMetrics) is served from pre-rendered pieces, one per family,
// sorted by name as the registry sorts them:
//
//   - ironic_node_conductor_info, written by writeNodeFamily as an
//     exposition.Stream. Per node generation (Topology.NodeGeneration) the
//     nodes' order and the family's gzip chunk are kept: compressing the
//     family per scrape would break the steady-state CPU row of
//     docs/performance.md. Its plain text is not kept (the live heap row):
//     a plain scrape writes it as it goes;
//   - the families of collectShared, rendered once per view, plain and gzip;
//   - per scrape, collectPerScrape's families and the process-wide
//     Gatherer's, in stored deflate blocks for a gzip scrape.

// viewKey identifies what a view's rendering depends on. The topology is
// held weakly: a rendering kept until the next scrape must not keep a
// replaced topology alive beside the new one: held plainly, peak RSS
// exceeds the peak RSS row of docs/performance.md (<= 2x the live heap) at
// 100k nodes (BenchmarkPeakRSS/settle=true).
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
	pieces []*exposition.Piece
}

// nodePieces is the node family of one node generation: its order (the
// nodes' order) and its gzip chunk, each made on first use.
type nodePieces struct {
	gen       uint64
	orderOnce sync.Once
	order     []int32
	zOnce     sync.Once
	z         exposition.Chunk
}

// rendered holds the latest view's pieces and the latest node generation's.
type rendered struct {
	mu    sync.Mutex
	view  *viewPieces
	nodes *nodePieces
	// fw compresses the views, one after the other: a compressor's garbage
	// exceeds the view's (the steady-state CPU row).
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
	tf := exposition.Families{}
	collectShared(textEmit(tf), v)
	if h.rendered.fw == nil {
		h.rendered.fw = exposition.NewFlate(flate.BestSpeed) // once per refresh: the steady-state CPU target
	}
	tf.Each(func(name string, text []byte) {
		vp.pieces = append(vp.pieces, exposition.NewPiece(name, text, h.rendered.fw))
	})
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
// first use; BestSpeed keeps the cold gzip scrape row at 1M nodes.
func (np *nodePieces) gzipped(t *topology.Topology) *exposition.Chunk {
	order := np.orderOf(t)
	np.zOnce.Do(func() {
		z := exposition.NewCompressor(exposition.NewFlate(flate.BestSpeed))
		_ = writeNodeFamily(z, t, order) // into memory: no error
		np.z = z.Finish()
	})
	return &np.z
}

// nodeStream is the node family of one topology, as an exposition.Stream.
type nodeStream struct {
	np *nodePieces
	t  *topology.Topology
}

func (s nodeStream) WriteText(w io.Writer) error { return writeNodeFamily(w, s.t, s.np.orderOf(s.t)) }
func (s nodeStream) Gzipped() *exposition.Chunk  { return s.np.gzipped(s.t) }

// servePrerendered writes the text exposition of v from its pieces.
func (h *handler) servePrerendered(ctx context.Context, w http.ResponseWriter, r *http.Request, v topology.View, format expfmt.Format) {
	gz := exposition.AcceptsGzip(r)
	pieces := slices.Clone(h.viewOf(v).pieces)
	tf := exposition.Families{}
	collectPerScrape(textEmit(tf), v, h.cache.Now())
	tf.Each(func(name string, text []byte) { pieces = append(pieces, exposition.ScrapePiece(name, text, gz)) })
	if h.opts.Nova != nil {
		// Nova's answer never takes the scrape's budget: its refresh is
		// waited for at most novacache.Config.MaxWait (no deadline), so a
		// slow Nova database never brings the scrape near its timeout.
		pieces = append(pieces, h.opts.Nova.Pieces(context.WithoutCancel(ctx))...)
	}
	var errs []error
	if h.opts.Gatherer != nil {
		var err error
		pieces, err = exposition.Gathered(pieces, h.opts.Gatherer, gz)
		errs = append(errs, err)
	}
	if h.opts.NodeInfo && v.Topology != nil {
		pieces = append(pieces, &exposition.Piece{Name: nodeInfoName, Stream: nodeStream{h.nodesOf(v.Topology), v.Topology}})
	}
	errs = append(errs, exposition.Write(w, format, gz, pieces))
	if err := errors.Join(errs...); err != nil {
		h.opts.Logger.Error("rendering /metrics", "err", err)
	}
}
