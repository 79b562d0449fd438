package collector

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// HandlerOptions configures the /metrics handler.
type HandlerOptions struct {
	ExporterOptions
	// Gatherer adds the process-wide metrics (build info, Go runtime, the
	// cache's refresh histogram) to every scrape. May be nil.
	Gatherer prometheus.Gatherer
	// ScrapeTimeoutOffset is subtracted from Prometheus' scrape timeout
	// header to leave time for encoding. Default 500ms.
	ScrapeTimeoutOffset time.Duration
	// Logger receives encoding errors. Default discards.
	Logger *slog.Logger
}

// NewHandler returns the /metrics handler. Each scrape builds a registry
// holding an Exporter bound to the scrape's deadline, taken from the
// X-Prometheus-Scrape-Timeout-Seconds header.
func NewHandler(cache *topology.Cache, opts HandlerOptions) http.Handler {
	if opts.ScrapeTimeoutOffset == 0 {
		opts.ScrapeTimeoutOffset = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cache: cache, opts: opts}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if timeout, ok := scrapeTimeout(r, opts.ScrapeTimeoutOffset); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		h.serveView(w, r, cache.Get(ctx))
	})
}

// handler renders views of one cache; it keeps the per-node family of the
// node generation it last rendered.
type handler struct {
	cache *topology.Cache
	opts  HandlerOptions
	nodes nodeFamilies
}

// serveView writes the exposition of v.
func (h *handler) serveView(w http.ResponseWriter, r *http.Request, v topology.View) {
	reg := prometheus.NewRegistry()
	perScrape := h.opts.ExporterOptions
	perScrape.NodeInfo = false // added below, gathered once per node generation
	reg.MustRegister(viewCollector{view: v, now: h.cache.Now(), opts: perScrape})
	gatherers := prometheus.Gatherers{reg}
	if h.opts.Gatherer != nil {
		gatherers = append(gatherers, h.opts.Gatherer)
	}
	var g prometheus.Gatherer = gatherers
	if h.opts.NodeInfo && v.Topology != nil {
		g = withFamilies{gatherers, h.nodes.get(v.Topology)}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(h.opts.Logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}).ServeHTTP(w, r)
}

// nodeFamilies holds ironic_node_conductor_info gathered once per node
// generation: on a large fleet it is nearly all of the exposition, and
// gathering it is the bulk of a scrape's cost, while refreshes mostly leave
// every node's labels as they were. The family is gathered from the very
// topology a scrape serves, so an older topology served after a newer one
// was built (a scrape whose deadline ran out during a refresh) still gets
// its own node series.
type nodeFamilies struct {
	mu     sync.Mutex
	gen    uint64
	gather func() ([]*dto.MetricFamily, error)
}

// get returns the gathering of t's node family, shared by every scrape of
// t's node generation.
func (f *nodeFamilies) get(t *topology.Topology) func() ([]*dto.MetricFamily, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gather == nil || f.gen != t.NodeGeneration {
		f.gen = t.NodeGeneration
		f.gather = sync.OnceValues(func() ([]*dto.MetricFamily, error) {
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(nodeInfoCollector{t}); err != nil {
				return nil, err
			}
			return reg.Gather()
		})
	}
	return f.gather
}

// scrapeTimeout reads Prometheus' scrape timeout header, less offset.
func scrapeTimeout(r *http.Request, offset time.Duration) (time.Duration, bool) {
	v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds")
	if v == "" {
		return 0, false
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || secs > 3600 {
		return 0, false
	}
	d := time.Duration(secs * float64(time.Second))
	if d > offset {
		d -= offset
	}
	return d, true
}

// withFamilies adds families gathered once per topology to a gatherer's.
// Unlike prometheus.Gatherers it does not re-check every metric of them:
// they came from a registry already, and their names are their own.
type withFamilies struct {
	prometheus.Gatherer
	extra func() ([]*dto.MetricFamily, error)
}

func (w withFamilies) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.Gatherer.Gather()
	extra, extraErr := w.extra()
	mfs = append(mfs, extra...)
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return mfs, errors.Join(err, extraErr)
}
