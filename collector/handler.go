package collector

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewExporter(ctx, cache, opts.ExporterOptions))
		gatherers := prometheus.Gatherers{reg}
		if opts.Gatherer != nil {
			gatherers = append(gatherers, opts.Gatherer)
		}
		promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
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
