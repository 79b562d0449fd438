package collector

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
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
func NewHandler(cache *Cache, opts HandlerOptions) http.Handler {
	if opts.ScrapeTimeoutOffset == 0 {
		opts.ScrapeTimeoutOffset = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if timeout, ok := scrapeTimeout(r, opts.ScrapeTimeoutOffset); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		view := cache.Get(ctx)
		reg := prometheus.NewRegistry()
		perScrape := opts.ExporterOptions
		perScrape.NodeInfo = false // added below from the topology's cache
		reg.MustRegister(viewCollector{view: view, now: cache.cfg.Now(), opts: perScrape})
		gatherers := prometheus.Gatherers{reg}
		if opts.Gatherer != nil {
			gatherers = append(gatherers, opts.Gatherer)
		}
		var g prometheus.Gatherer = gatherers
		if opts.NodeInfo && view.Topology != nil {
			g = withFamilies{gatherers, view.Topology.nodeInfoFamily}
		}
		promhttp.HandlerFor(g, promhttp.HandlerOpts{
			ErrorLog:      slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError),
			ErrorHandling: promhttp.ContinueOnError,
		}).ServeHTTP(w, r)
	})
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
