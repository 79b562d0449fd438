// Command ironic_conductor_exporter reads OpenStack Ironic's database
// read-only and exports its conductors, their liveness and the
// node-to-conductor mapping of Ironic's hash rings as Prometheus metrics and
// as Ironic-compatible JSON.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
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
	apiListen     []string
	apiConfigFile string
	minInterval   time.Duration
	fullInterval  time.Duration
	historyWindow time.Duration
	// conductorCleanupInterval and conductorCleanupTimeout come from
	// ironic.conf only ([conductor]conductor_cleanup_*; zero: Ironic's
	// defaults, -1: disabled).
	conductorCleanupInterval, conductorCleanupTimeout time.Duration
	refreshTimeout                                    time.Duration
	nodeInfo                                          bool
	shutdownGracePeriod                               time.Duration
	web                                               webLimits

	// Ironic's own configuration files, and which of the flags they may
	// fill were given explicitly (those win over the files).
	ironicConfigFiles, ironicConfigDirs              []string
	heartbeatSet, partitionExponentSet, algorithmSet bool
	// Ironic's concurrency limits ([conductor]max_concurrent_*), and whether
	// their flags were given explicitly
	maxConcurrentDeploy, maxConcurrentClean                    int
	maxConcurrentPerGroup                                      bool
	maxConcurrentDeploySet, maxConcurrentCleanSet, perGroupSet bool
	// from ironic.conf only: options that change Ironic's rings
	pinReleaseVersion, ironicConnection string
	hashDistributionReplicas            int
	// from ironic.conf only: how long stopping workers live and how fast
	// Ironic takes nodes over (zero: Ironic's defaults)
	gracefulShutdownTimeout, syncLocalStateInterval time.Duration
	periodicMaxWorkers                              int

	// ironicConf is Ironic's configuration as read (nil without files).
	ironicConf *ironicconf.Config

	// auth configures the JSON API's authentication.
	auth authConfig

	// nova configures the optional Nova side (nova.go).
	nova novaConfig

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
		"[conductor]heartbeat_timeout, [DEFAULT]hash_partition_exponent, [DEFAULT]hash_ring_algorithm and [conductor]max_concurrent_*; repeatable, later files win. "+
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
	app.Flag("ironic.max-concurrent-deploy", "Ironic's [conductor]max_concurrent_deploy: nodes deploying or waiting for their ramdisk beyond which Ironic refuses new deploys (21.1+).").
		Default("250").IsSetByUser(&cfg.maxConcurrentDeploySet).IntVar(&cfg.maxConcurrentDeploy)
	app.Flag("ironic.max-concurrent-clean", "Ironic's [conductor]max_concurrent_clean: nodes deleting or cleaning beyond which Ironic refuses new tear-downs and cleanings (21.1+).").
		Default("50").IsSetByUser(&cfg.maxConcurrentCleanSet).IntVar(&cfg.maxConcurrentClean)
	app.Flag("ironic.max-concurrent-per-conductor-group", "Ironic's [conductor]max_concurrent_per_conductor_group: the limits count each conductor group's nodes apart (35.0+).").
		Default("false").IsSetByUser(&cfg.perGroupSet).BoolVar(&cfg.maxConcurrentPerGroup)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&cfg.telemetryPath)
	app.Flag("refresh.min-interval", "A scrape or lookup reads the database only when the cached topology is older than this.").
		Default("5s").DurationVar(&cfg.minInterval)
	app.Flag("refresh.full-interval", "A refresh reads the nodes only when a probe of the nodes table changed, and then only the rows that changed, merged into the previous ones; every node is read when they were all last read this long ago; 0 reads them all at every refresh.").
		Default("10m").DurationVar(&cfg.fullInterval)
	app.Flag("ironic.history-window", "How far back ironic_conductor_history_errors and the page count node_history's events (Ironic 18.2+), read after each refresh from where the last read ended; 0 reads none.").
		Default("1h").DurationVar(&cfg.historyWindow)
	app.Flag("refresh.timeout", "Deadline of one refresh (all queries and the topology).").Default("30s").DurationVar(&cfg.refreshTimeout)
	app.Flag("collector.node-info", "Export the per-node families ironic_node_conductor_info and, with Nova, ironic_node_nova_compute_info (--no-collector.node-info on very large fleets).").
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
	app.Flag("web.max-connections", "Open connections per listen address; at the cap the connection idle longest is closed for a new one (all busy: it waits in the kernel's backlog). "+
		"Lowered to fit the file descriptor limit. 0: as many as that limit allows.").
		Default("512").IntVar(&cfg.web.maxConns)
	app.Flag("web.external-url", "Base URL of links in the JSON API (Ironic's [api]public_endpoint), e.g. https://ironic.example.com:6385; "+
		"default: the address the request arrived at.").StringVar(&cfg.web.externalURL)
	addAuthFlags(app, &cfg.auth)
	addNovaFlags(app, &cfg.nova)
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
