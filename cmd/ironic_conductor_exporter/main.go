// Command ironic_conductor_exporter reads OpenStack Ironic's database
// read-only and exports its conductors, their liveness and the
// node-to-conductor mapping of Ironic's hash rings as Prometheus metrics and
// as Ironic-compatible JSON.
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	"golang.org/x/sync/errgroup"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/api"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/collector"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/limit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/memlimit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/methods"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/status"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

const exporterName = "ironic_conductor_exporter"

// The default ports: outside the fully allocated Prometheus range
// 9100-9999 (9608 is ironic-prometheus-exporter's, 9180 and 9198
// openstack-exporter's), and used by no OpenStack, Kolla-Ansible,
// OpenStack-Ansible, openstack-helm or Metal3 component (docs/operators.md,
// "Ports").
const (
	defaultPort      = "10067"
	defaultProbePort = "10068"
	defaultAPIPort   = "10069"
)

func main() { os.Exit(run(os.Args[1:])) }

// config is everything the command line sets.
type config struct {
	dsn, dsnFile       string
	queryTimeout       time.Duration
	maxOpenConns       int
	heartbeatTimeout   time.Duration
	partitionExponent  int
	algorithm          string
	release            string
	telemetryPath      string
	probeListenAddress string
	// apiListen are the addresses of the API's own door (none: the API is
	// on --web.listen-address), apiConfigFile its TLS.
	apiListen           []string
	apiConfigFile       string
	minInterval         time.Duration
	fullInterval        time.Duration
	refreshTimeout      time.Duration
	nodeInfo            bool
	shutdownGracePeriod time.Duration
	web                 webLimits

	// Ironic's own configuration files, and which of the flags they may
	// fill were given explicitly (those win over the files).
	ironicConfigFiles, ironicConfigDirs              []string
	heartbeatSet, partitionExponentSet, algorithmSet bool
	// from ironic.conf only: options that change Ironic's rings
	pinReleaseVersion, ironicConnection string
	hashDistributionReplicas            int

	// ironicConf is Ironic's configuration as read (nil without files).
	ironicConf *ironicconf.Config

	// auth configures the JSON API's authentication.
	auth authConfig

	// source, when set, wraps the database the topology is read from (the
	// demo's multi-conductor fleet).
	source func(topology.Source) topology.Source
}

func run(args []string) int {
	var cfg config
	var demoCfg demoConfig
	app, toolkitFlags, promslogConfig, demoCmd := newApp(&cfg, &demoCfg)
	command, err := app.Parse(args)
	isDemo := err == nil && command == demoCmd.FullCommand()
	if isDemo {
		err = checkDemoArgs(args, demoCfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", exporterName, err)
		return 2
	}
	logger := promslog.New(promslogConfig)
	if isDemo {
		err = runDemo(cfg, demoCfg, toolkitFlags, logger)
	} else {
		err = serve(cfg, toolkitFlags, logger)
	}
	if err != nil {
		logger.Error("exiting", "err", err)
		return 1
	}
	return 0
}

// newApp defines the command line: every flag, each with its environment
// variable (IRONIC_EXPORTER_ and the flag's name in capitals, dots and
// dashes as underscores).
func newApp(cfg *config, demoCfg *demoConfig) (*kingpin.Application, *web.FlagConfig, *promslog.Config, *kingpin.CmdClause) {
	app := kingpin.New(exporterName, "Prometheus exporter and Ironic-compatible JSON API for OpenStack Ironic conductors and hash rings.")
	app.Flag("db.dsn", "Ironic's database connection string, as in ironic.conf [database]connection (SQLAlchemy URL: postgresql://, mysql+pymysql://, sqlite:////path) or a libpq URL / key=value DSN; default: from --ironic.config-file.").
		Envar("IRONIC_EXPORTER_DB_DSN").StringVar(&cfg.dsn)
	app.Flag("db.dsn-file", "File holding the connection string (for secrets mounted as files).").StringVar(&cfg.dsnFile)
	app.Flag("db.query-timeout", "Deadline of each database query.").Default("10s").DurationVar(&cfg.queryTimeout)
	app.Flag("db.max-open-conns", "Connections the exporter may hold open.").Default("2").IntVar(&cfg.maxOpenConns)
	app.Flag("ironic.config-file", "Ironic's configuration file (ironic.conf), read as oslo.config reads it for [database]connection, "+
		"[conductor]heartbeat_timeout, [DEFAULT]hash_partition_exponent and [DEFAULT]hash_ring_algorithm; repeatable, later files win. "+
		"Explicit flags win over the files.").StringsVar(&cfg.ironicConfigFiles)
	app.Flag("ironic.config-dir", "Directory whose *.conf files are read, in lexical order, after --ironic.config-file (repeatable).").
		StringsVar(&cfg.ironicConfigDirs)
	app.Flag("ironic.release", "Ironic release whose rules apply (29.0 or 2025.1 style); default: told by the database at every refresh.").
		StringVar(&cfg.release)
	app.Flag("ironic.heartbeat-timeout", "Ironic's [conductor]heartbeat_timeout: seconds as in ironic.conf (60), or a duration (1m).").Default("60").
		IsSetByUser(&cfg.heartbeatSet).SetValue((*seconds)(&cfg.heartbeatTimeout))
	app.Flag("ironic.hash-partition-exponent", "Ironic's [DEFAULT]hash_partition_exponent.").Default("5").
		IsSetByUser(&cfg.partitionExponentSet).IntVar(&cfg.partitionExponent)
	app.Flag("ironic.hash-ring-algorithm", "Ironic's [DEFAULT]hash_ring_algorithm: "+strings.Join(ring.Algorithms(), ", ")+".").
		Default("md5").IsSetByUser(&cfg.algorithmSet).StringVar(&cfg.algorithm)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&cfg.telemetryPath)
	app.Flag("refresh.min-interval", "A scrape or lookup reads the database only when the cached topology is older than this.").
		Default("5s").DurationVar(&cfg.minInterval)
	app.Flag("refresh.full-interval", "A refresh reads the nodes only when a probe of the nodes table changed, and then only the rows that changed, merged into the previous ones; every node is read when they were all last read this long ago; 0 reads them all at every refresh.").
		Default("10m").DurationVar(&cfg.fullInterval)
	app.Flag("refresh.timeout", "Deadline of one refresh (all queries and the topology).").Default("30s").DurationVar(&cfg.refreshTimeout)
	app.Flag("collector.node-info", "Export ironic_node_conductor_info, one series per node (--no-collector.node-info on very large fleets).").
		Default("true").BoolVar(&cfg.nodeInfo)
	app.Flag("web.shutdown-grace-period", "Time given to in-flight requests on SIGTERM.").Default("10s").DurationVar(&cfg.shutdownGracePeriod)
	app.Flag("web.probe-listen-address", "Address of a second, plain-HTTP listener that serves only /healthz and /readyz, "+
		"without the TLS and basic auth of --web.config.file, for kubelet and systemd probes (e.g. :"+defaultProbePort+"); empty: none.").
		Default("").StringVar(&cfg.probeListenAddress)
	app.Flag("api.listen-address", "Address of a listener of its own for the JSON API and the status page (e.g. :"+defaultAPIPort+"; repeatable), "+
		"locked by --auth.strategy, with the TLS of --api.config-file; --web.listen-address then serves only the telemetry path, a landing page and the probes. "+
		"Empty: the API and the page are served on --web.listen-address.").StringsVar(&cfg.apiListen)
	app.Flag("api.config-file", "Web configuration file of --api.listen-address, in the format of --web.config.file (tls_server_config, http_server_config); "+
		"basic_auth_users must be empty, since --auth.strategy locks that door.").Default("").StringVar(&cfg.apiConfigFile)
	app.Flag("web.read-timeout", "Time a client has to send a whole request.").Default("30s").DurationVar(&cfg.web.readTimeout)
	app.Flag("web.write-timeout", "Time a response may take to write, from the end of the request; a client that reads slower is cut off.").
		Default("60s").DurationVar(&cfg.web.writeTimeout)
	app.Flag("web.idle-timeout", "Time an idle keep-alive connection stays open.").Default("30s").DurationVar(&cfg.web.idleTimeout)
	app.Flag("web.max-requests", "JSON API and status page requests served at once, after authentication (the telemetry path and probes have their own bounds); "+
		"more wait up to 1s, then get 503. A quarter of it (at least 1) bounds the Keystone validations in flight. 0: no limit.").
		Default("40").IntVar(&cfg.web.maxRequests)
	app.Flag("web.max-renders", "Renders of the telemetry path at once (a render gives its slot back while a write waits for a slow client); more wait up to 5s, then get 503. 0: no limit.").
		Default("2").IntVar(&cfg.web.maxRenders)
	app.Flag("web.max-connections", "Open connections per listen address; more wait in the kernel's backlog. 0: no limit.").
		Default("512").IntVar(&cfg.web.maxConns)
	app.Flag("web.external-url", "Base URL of links in the JSON API (Ironic's [api]public_endpoint), e.g. https://ironic.example.com:6385; "+
		"default: the address the request arrived at.").StringVar(&cfg.web.externalURL)
	addAuthFlags(app, &cfg.auth)
	toolkitFlags := kingpinflag.AddFlags(app, ":"+defaultPort)
	promslogConfig := &promslog.Config{}
	flag.AddFlags(app, promslogConfig)
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.Command("serve", "Serve Ironic's database (the default command).").Default()
	demoCmd := addDemoCommand(app, demoCfg)
	addEnvars(app, demoCmd)
	return app, toolkitFlags, promslogConfig, demoCmd
}

// envarFor is the environment variable of a flag.
func envarFor(flag string) string {
	return "IRONIC_EXPORTER_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// addEnvars gives every visible flag of the application and of cmds its
// environment variable, unless it has one.
func addEnvars(app *kingpin.Application, cmds ...*kingpin.CmdClause) {
	add := func(flags []*kingpin.FlagModel, get func(string) *kingpin.FlagClause) {
		for _, f := range flags {
			if !f.Hidden && f.Envar == "" && f.Name != "help" && f.Name != "version" {
				get(f.Name).Envar(envarFor(f.Name))
			}
		}
	}
	add(app.Model().Flags, app.GetFlag)
	for _, c := range cmds {
		add(c.Model().Flags, c.GetFlag)
	}
}

// givenBy reports whether a flag was set on the command line (by) or in
// its environment variable: kingpin's IsSetByUser sees only the former.
func givenBy(by bool, flag string) bool { return by || os.Getenv(envarFor(flag)) != "" }

// seconds is a duration flag that also takes bare seconds, as ironic.conf
// writes heartbeat_timeout ("60").
type seconds time.Duration

func (s *seconds) Set(v string) error {
	if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		*s = seconds(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want seconds (60) or a duration (1m): %q", v)
	}
	*s = seconds(d)
	return nil
}

func (s *seconds) String() string { return time.Duration(*s).String() }

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
	metricsHandler := collector.NewHandler(a.cache, collector.HandlerOptions{
		ExporterOptions: collector.ExporterOptions{NodeInfo: cfg.nodeInfo},
		Gatherer:        a.reg,
		Logger:          a.logger,
	})
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
	apiHandler := api.NewHandler(a.cache, api.Options{Logger: a.logger, PublicEndpoint: externalURL, Access: authn.access})
	statusPage := status.NewHandler(a.cache, status.Options{Logger: a.logger, Version: version.Version,
		MetricsPath: cfg.telemetryPath, History: a.history})
	// Browsers get the status page at /; API clients get Ironic's root.
	isPage := func(r *http.Request) bool { return r.URL.Path == "/" && status.WantsHTML(r) }
	work := limit.Concurrent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPage(r) {
			statusPage.ServeHTTP(w, r)
			return
		}
		apiHandler.ServeHTTP(w, r)
	}), cfg.web.maxRequests, time.Second, "requests")
	// The page shows every conductor, node and lock: the same
	// authentication as the API and (keystone) the policy of listing all
	// nodes, conductors and reservations.
	page, apiAuthn := guardStatusPage(authn, work), auth.Middleware(authn.authn, work)
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPage(r) {
			page.ServeHTTP(w, r)
			return
		}
		apiAuthn.ServeHTTP(w, r)
	})
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
	var servers []*http.Server
	var serves []func() error
	if cfg.probeListenAddress != "" {
		// No TLS, no authentication: /healthz and /readyz only.
		probeSrv := &http.Server{Handler: a.probeMux(nil), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10,
			ReadTimeout: cfg.web.readTimeout, WriteTimeout: cfg.web.writeTimeout, IdleTimeout: cfg.web.idleTimeout}
		l, err := net.Listen("tcp", cfg.probeListenAddress)
		if err != nil {
			return fmt.Errorf("--web.probe-listen-address: %w", err)
		}
		a.logger.Info("listening for probes (no TLS, no authentication: /healthz and /readyz only)", "address", l.Addr().String())
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

// topologySettings are the Ironic settings the topology is computed with,
// from the flags and Ironic's configuration; src names them in errors.
func topologySettings(cfg config, src sources) (topology.Settings, error) {
	alg, err := ring.ParseAlgorithm(cfg.algorithm)
	if err != nil {
		return topology.Settings{}, fmt.Errorf("%s: %w", src.algorithm, err)
	}
	if _, err := ring.New(nil, cfg.partitionExponent, alg); err != nil {
		return topology.Settings{}, fmt.Errorf("%s: %w", src.partitionExponent, err)
	}
	var release rules.Release
	if cfg.release != "" {
		if release, err = rules.ParseRelease(cfg.release); err != nil {
			return topology.Settings{}, fmt.Errorf("--ironic.release: %w", err)
		}
	}
	return topology.Settings{Settings: rules.Settings{HeartbeatTimeout: cfg.heartbeatTimeout,
		PartitionExponent: cfg.partitionExponent, Algorithm: alg,
		PinReleaseVersion: cfg.pinReleaseVersion, HashDistributionReplicas: cfg.hashDistributionReplicas,
		Connection: cfg.ironicConnection},
		Release: release}, nil
}

// flagSources are the sources of settings given by flags alone.
var flagSources = sources{dsn: "--db.dsn", partitionExponent: "--ironic.hash-partition-exponent",
	algorithm: "--ironic.hash-ring-algorithm"}

// sources says where each setting came from, for errors: a flag name, or
// the option and file in Ironic's configuration.
type sources struct {
	dsn, partitionExponent, algorithm string
}

// applyIronicConfig reads --ironic.config-file and --ironic.config-dir and
// fills every setting that no flag gave explicitly: the database (when
// neither --db.dsn, IRONIC_EXPORTER_DB_DSN nor --db.dsn-file is given), the
// heartbeat timeout, the partition exponent and the algorithm.
func applyIronicConfig(cfg *config, logger *slog.Logger) (sources, error) {
	src := flagSources
	if cfg.dsn == "" && cfg.dsnFile != "" {
		src.dsn = "--db.dsn-file"
	}
	if len(cfg.ironicConfigFiles) == 0 && len(cfg.ironicConfigDirs) == 0 {
		return src, nil
	}
	conf, err := ironicconf.Load(cfg.ironicConfigFiles, cfg.ironicConfigDirs)
	if err != nil {
		return src, err
	}
	cfg.ironicConf = conf
	var from []any
	note := func(setting string, o interface{ Where() string }) { from = append(from, setting, o.Where()) }
	if cfg.dsn == "" && cfg.dsnFile == "" && conf.Connection.Set {
		cfg.dsn = conf.Connection.Value
		src.dsn = conf.Connection.Where()
		note("database", conf.Connection)
	}
	if !givenBy(cfg.heartbeatSet, "ironic.heartbeat-timeout") && conf.HeartbeatTimeout.Set {
		cfg.heartbeatTimeout = conf.HeartbeatTimeout.Value
		note("heartbeat_timeout", conf.HeartbeatTimeout)
	}
	if !givenBy(cfg.partitionExponentSet, "ironic.hash-partition-exponent") && conf.HashPartitionExponent.Set {
		cfg.partitionExponent = conf.HashPartitionExponent.Value
		src.partitionExponent = conf.HashPartitionExponent.Where()
		note("hash_partition_exponent", conf.HashPartitionExponent)
	}
	if !givenBy(cfg.algorithmSet, "ironic.hash-ring-algorithm") && conf.HashRingAlgorithm.Set {
		cfg.algorithm = conf.HashRingAlgorithm.Value
		src.algorithm = conf.HashRingAlgorithm.Where()
		note("hash_ring_algorithm", conf.HashRingAlgorithm)
	}
	cfg.ironicConnection = conf.Connection.Value
	if conf.PinReleaseVersion.Set {
		cfg.pinReleaseVersion = conf.PinReleaseVersion.Value
		note("pin_release_version", conf.PinReleaseVersion)
	}
	if conf.HashDistributionReplicas.Set {
		cfg.hashDistributionReplicas = conf.HashDistributionReplicas.Value
		note("hash_distribution_replicas", conf.HashDistributionReplicas)
	}
	logger.Info("read Ironic's configuration", append([]any{"files", strings.Join(conf.Files, ",")}, from...)...)
	return src, nil
}

// resolveDSN picks the connection string from the flag (or its environment
// variable) or the file; exactly one must be given.
func resolveDSN(dsn, file string) (string, error) {
	switch {
	case dsn != "" && file != "":
		return "", errors.New("give --db.dsn (or IRONIC_EXPORTER_DB_DSN) or --db.dsn-file, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--db.dsn-file: %w", err)
		}
		dsn = strings.TrimSpace(string(b))
		if dsn == "" {
			return "", fmt.Errorf("--db.dsn-file: %s is empty", file)
		}
		return dsn, nil
	case dsn == "":
		return "", errors.New("no database: set --db.dsn, IRONIC_EXPORTER_DB_DSN or --db.dsn-file, or point --ironic.config-file at an ironic.conf with [database]connection")
	}
	return dsn, nil
}
