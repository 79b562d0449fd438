package collector

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// HandlerOptions configures the /metrics handler.
type HandlerOptions struct {
	ExporterOptions
	// Gatherer adds the process-wide metrics (build info, Go runtime, the
	// cache's refresh histogram) to every scrape. May be nil.
	Gatherer prometheus.Gatherer
	// Logger receives encoding errors. Default discards.
	Logger *slog.Logger
}

// scrapeTimeoutOffset is subtracted from Prometheus' scrape timeout header
// to leave time for encoding.
const scrapeTimeoutOffset = 500 * time.Millisecond

// NewHandler returns the /metrics handler. Each scrape takes the cache's
// view within the scrape's deadline (the X-Prometheus-Scrape-Timeout-Seconds
// header, less scrapeTimeoutOffset) and writes it: the text format from the
// pieces kept per view and node generation (render.go), any other format
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
		h.serveView(w, r, cache.Get(ctx))
	})
}

// handler renders views of one cache; it keeps the pre-rendered pieces of
// the latest view and node generation (render.go).
type handler struct {
	cache    *topology.Cache
	opts     HandlerOptions
	rendered rendered
}

// serveView writes the exposition of v: the text format from pre-rendered
// pieces, any other format (protobuf) through promhttp.
func (h *handler) serveView(w http.ResponseWriter, r *http.Request, v topology.View) {
	if format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...); format.FormatType() == expfmt.TypeTextPlain {
		h.servePrerendered(w, r, v, format)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(viewCollector{view: v, now: h.cache.Now(), opts: h.opts.ExporterOptions})
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
