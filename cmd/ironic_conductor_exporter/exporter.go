package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/sync/errgroup"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/api"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/collector"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/limit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/memlimit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/methods"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/status"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// serve checks the flags and doors, opens the database and serves until
// SIGTERM or an interrupt (exporter.run).
func serve(cfg config, toolkitFlags *web.FlagConfig, logger *slog.Logger) error {
	if err := checkFlags(cfg); err != nil {
		return err
	}
	externalURL, err := checkExternalURL(cfg.web.externalURL)
	if err != nil {
		return err
	}
	src, err := applyIronicConfig(&cfg, logger)
	if err != nil {
		return err
	}
	dsn, err := resolveDSN(cfg.dsn, cfg.dsnFile)
	if err != nil {
		return err
	}
	settings, err := topologySettings(cfg, src)
	if err != nil {
		return err
	}
	apiListen := cfg.apiListen
	if len(apiListen) == 0 {
		apiListen = *toolkitFlags.WebListenAddresses
	}
	authn, err := setupAuth(cfg.auth, cfg.ironicConf, apiListen, cfg.web.maxRequests, logger)
	if err != nil {
		return err
	}
	if err := checkDoors(cfg, toolkitFlags, authn.mode, logger); err != nil {
		return err
	}
	database, err := db.Open(dsn, dbconn.Options{QueryTimeout: cfg.queryTimeout, MaxOpenConns: cfg.maxOpenConns})
	if err != nil {
		return fmt.Errorf("%s: %w", src.dsn, err)
	}
	defer func() { _ = database.Close() }()
	logger.Info("starting", "version", version.Info(), "build_context", version.BuildContext(),
		"database", database.String(), "backend", database.Backend(), "heartbeat_timeout", cfg.heartbeatTimeout,
		"hash_partition_exponent", cfg.partitionExponent, "hash_ring_algorithm", cfg.algorithm,
		"ironic_release", cmp.Or(cfg.release, "detected"))
	if ign := database.IgnoredOptions(); len(ign) > 0 {
		logger.Info("database URL options the exporter has no use for were ignored", "options", strings.Join(ign, ","))
	}
	e, err := newExporter(cfg, settings, database, logger)
	if err != nil {
		return err
	}
	novaReader, err := e.setupNova(cfg)
	if err != nil {
		return err
	}
	if novaReader != nil {
		defer func() { _ = novaReader.Close() }()
	}
	return e.run(cfg, toolkitFlags, authn, externalURL)
}

// exporter is the running exporter: the registry, the topology cache and
// what observes its refreshes.
type exporter struct {
	logger   *slog.Logger
	settings topology.Settings
	reg      *prometheus.Registry
	cache    *topology.Cache
	history  *status.History
	// nova is the Nova side's cache; nil when Nova is not configured.
	nova *novacache.Cache
}

// setupNova opens the Nova side when it is configured and registers its
// metrics; the returned reader (nil without Nova) is the caller's to close.
func (a *exporter) setupNova(cfg config) (*novadb.Reader, error) {
	var refreshes *collector.NovaRefreshMetrics
	cache, reader, err := setupNova(cfg.nova, dbconn.Options{QueryTimeout: cfg.queryTimeout, MaxOpenConns: cfg.maxOpenConns},
		cfg.refreshTimeout, a.cache, func(r novacache.Refresh) { refreshes.Observe(r) }, a.logger)
	if err != nil || cache == nil {
		return nil, err
	}
	if refreshes, err = collector.NewNovaRefreshMetrics(a.reg); err != nil {
		_ = reader.Close()
		return nil, err
	}
	a.nova = cache
	return reader, nil
}

// newExporter registers the exporter's own metrics and builds the topology
// cache over database.
func newExporter(cfg config, settings topology.Settings, database *db.DB, logger *slog.Logger) (*exporter, error) {
	a := &exporter{logger: logger, settings: settings, reg: prometheus.NewRegistry(),
		// The status page's per-conductor history: bounded, since start.
		history: status.NewHistory(2000, 100)}
	a.reg.MustRegister(versioncollector.NewCollector("ironic_exporter"),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	health := collector.NewDatabaseHealth(logger)
	a.reg.MustRegister(health)
	var source topology.Source = database
	if cfg.source != nil {
		source = cfg.source(source)
	}
	refreshes, err := collector.NewRefreshMetrics(a.reg)
	if err != nil {
		return nil, err
	}
	a.cache, err = topology.NewCache(topology.CacheConfig{
		Source:         source,
		Settings:       settings,
		MinInterval:    cfg.minInterval,
		FullInterval:   cfg.fullInterval,
		HistoryWindow:  cfg.historyWindow,
		RefreshTimeout: cfg.refreshTimeout,
		Logger:         logger,
		OnRefresh: func(r topology.Refresh) {
			refreshes.Observe(r)
			health.Observe(r)
			a.history.Observe(r)
		},
		NodesReplaced: memlimit.Settle,
	})
	return a, err
}

// probeMux serves /healthz and /readyz, and routes: every door has the
// probes.
func (a *exporter) probeMux(routes map[string]http.Handler) http.Handler {
	healthz := methods.GetHead(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	}))
	readyz := methods.GetHead(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Ready once a topology was read. Until then a probe starts a
		// refresh (a not-ready pod may get no scrape to do it) and waits
		// for it briefly; once ready it never touches the database.
		v := a.cache.Current()
		if v.Topology == nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			v = a.cache.Get(ctx)
			cancel()
		}
		if v.Topology == nil {
			// The reason (a database error: addresses, user names) is in
			// the log, and its kind in ironic_exporter_last_refresh_error;
			// an unauthenticated probe learns nothing more.
			a.logger.Debug("not ready", "err", v.Err, "permanent", v.Permanent())
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	}))
	m := http.NewServeMux()
	m.Handle("/healthz", healthz)
	m.Handle("/readyz", readyz)
	for p, h := range routes {
		m.Handle(p, h)
	}
	return m
}

// routes are the handlers of the doors. Without --api.listen-address, web
// serves everything: the telemetry path, the probes, the status page and
// Ironic's API. With it, web serves the telemetry path, a landing page and
// the probes, and api the probes, the page and Ironic's API. Each kind of
// work has a bound of its own, so that no flood through one starves
// another: --web.max-renders for the telemetry path, --web.max-requests for
// the API and the page (after authentication, whose bcrypt and Keystone
// work have their own bounds in auth), none for the probes.
func (a *exporter) routes(cfg config, authn *apiAuth, externalURL string) (webDoor, apiDoor http.Handler) {
	metricsOpts := collector.HandlerOptions{
		ExporterOptions: collector.ExporterOptions{NodeInfo: cfg.nodeInfo},
		Gatherer:        a.reg,
		Logger:          a.logger,
	}
	if a.nova != nil {
		metricsOpts.Nova = collector.NewNovaCollector(a.nova, metricsOpts.ExporterOptions)
	}
	metricsHandler := collector.NewHandler(a.cache, metricsOpts)
	metrics := methods.GetHead(limit.Renders(quietOnDisconnect(metricsHandler, a.logger), cfg.web.maxRenders, 5*time.Second, "renders"))
	// The policy's defaults follow the Ironic release: the flag's, else the
	// one the served topology was judged by.
	authn.release = func() (rules.Release, bool) {
		if release := a.settings.Release; !release.IsZero() {
			return release, true
		}
		if v := a.cache.Current(); v.Topology != nil {
			return v.Topology.Rules.Release(), true
		}
		return rules.Release{}, false
	}
	apiOpts := api.Options{Logger: a.logger, PublicEndpoint: externalURL, Access: authn.access}
	if a.nova != nil {
		apiOpts.Nova = a.nova
	}
	apiHandler := api.NewHandler(a.cache, apiOpts)
	statusOpts := status.Options{Logger: a.logger, Version: version.Version, MetricsPath: cfg.telemetryPath, History: a.history}
	if a.nova != nil {
		statusOpts.Nova = func() *novacache.State { return a.nova.Get(context.Background()) }
		statusOpts.NovaAllowed = authn.novaAllowed
	}
	statusPage := status.NewHandler(a.cache, statusOpts)
	// Browsers get the status page at /; API clients get Ironic's root.
	pageOr := func(page, api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" && status.WantsHTML(r) {
				page.ServeHTTP(w, r)
				return
			}
			api.ServeHTTP(w, r)
		})
	}
	work := limit.Concurrent(pageOr(statusPage, apiHandler), cfg.web.maxRequests, time.Second, "requests")
	// The page shows every conductor, node and lock: the same
	// authentication as the API and (keystone) the policy of listing all
	// nodes, conductors and reservations.
	root := pageOr(guardStatusPage(authn, work), auth.Middleware(authn.authn, work))
	if len(cfg.apiListen) == 0 {
		return a.probeMux(map[string]http.Handler{cfg.telemetryPath: metrics, "/": root}), nil
	}
	landing, err := web.NewLandingPage(web.LandingConfig{Name: exporterName, Version: version.Info(),
		Description: "Prometheus exporter for OpenStack Ironic conductors and hash rings. The JSON API and the status page are on --api.listen-address.",
		Links:       []web.LandingLinks{{Address: cfg.telemetryPath, Text: "Metrics"}}})
	if err != nil {
		panic(err) // only a broken embedded template fails
	}
	// "/{$}": the landing page at / only; other paths are the mux's 404.
	webDoor = a.probeMux(map[string]http.Handler{cfg.telemetryPath: metrics, "/{$}": methods.GetHead(landing)})
	return webDoor, a.probeMux(map[string]http.Handler{"/": root})
}

// run serves until SIGTERM or an interrupt, or until a listener fails, then
// shuts every server down gracefully. The listeners share one lifecycle
// (an errgroup, as kube-state-metrics runs its two): the first to fail
// stops the others, and its error is run's.
func (a *exporter) run(cfg config, toolkitFlags *web.FlagConfig, authn *apiAuth, externalURL string) error {
	webHandler, apiHandler := a.routes(cfg, authn, externalURL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go a.cache.Get(ctx) // warm the cache; failures are logged and exported
	if a.nova != nil {
		go a.nova.Get(ctx) // warm the Nova answer, as the topology's
	}
	var servers []*http.Server
	var serves []func() error
	// Every door's connections fit under the descriptor limit.
	webConns, probeConns := fitConns(a.logger, cfg.web.maxConns, len(*toolkitFlags.WebListenAddresses)+len(cfg.apiListen),
		cfg.probeListenAddress != "", cfg.maxOpenConns)
	cfg.web.maxConns = webConns
	if cfg.probeListenAddress != "" {
		// No TLS, no authentication: /healthz and /readyz only.
		probeSrv := &http.Server{Handler: a.probeMux(nil), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10,
			ReadTimeout: cfg.web.readTimeout, WriteTimeout: cfg.web.writeTimeout, IdleTimeout: cfg.web.idleTimeout,
			ErrorLog: serverErrorLog(a.logger)}
		limit.Track(probeSrv)
		ln, err := net.Listen("tcp", cfg.probeListenAddress)
		if err != nil {
			return fmt.Errorf("--web.probe-listen-address: %w", err)
		}
		l := limit.NewCPU(limit.NewConns(ln, probeConns), runtime.GOMAXPROCS(0))
		a.logger.Info("listening for probes (no TLS, no authentication: /healthz and /readyz only)", "address", l.Addr().String(),
			"max_connections", probeConns)
		servers = append(servers, probeSrv)
		serves = append(serves, func() error { return probeSrv.Serve(l) })
	}
	if apiHandler != nil {
		apiSrv := newServer(apiHandler, cfg.web, a.logger)
		noSocket := false
		apiFlags := &web.FlagConfig{WebListenAddresses: &cfg.apiListen, WebSystemdSocket: &noSocket, WebConfigFile: &cfg.apiConfigFile}
		ls, err := listen(cfg.apiListen, cfg.web.maxConns)
		if err != nil {
			return fmt.Errorf("--api.listen-address: %w", err)
		}
		a.logger.Info("listening for the JSON API and the status page", "addresses", strings.Join(cfg.apiListen, ","), "auth_strategy", authn.mode)
		servers = append(servers, apiSrv)
		serves = append(serves, func() error { return web.ServeMultiple(ls, apiSrv, apiFlags, a.logger) })
	}
	srv := newServer(webHandler, cfg.web, a.logger)
	servers = append(servers, srv)
	serves = append(serves, func() error { return listenAndServe(srv, toolkitFlags, cfg.web.maxConns, a.logger) })

	g, gctx := errgroup.WithContext(ctx)
	for _, serve := range serves {
		g.Go(func() error {
			if err := serve(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		if ctx.Err() != nil {
			a.logger.Info("shutting down", "grace_period", cfg.shutdownGracePeriod)
		}
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGracePeriod)
		defer cancel()
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Shutdown(sctx)) // errors.Join drops the nils
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("graceful shutdown: %w", err)
		}
		return nil
	})
	return g.Wait()
}
