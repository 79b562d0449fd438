package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/demo"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// demoConfig is what the demo command's own flags set.
type demoConfig struct {
	dbPath string
	speed  int
}

// addDemoCommand registers `demo` and its flags.
func addDemoCommand(app *kingpin.Application, dc *demoConfig) *kingpin.CmdClause {
	cmd := app.Command("demo", "Run on a database of its own, with no database to install: a SQLite file with Ironic's real schema, "+
		"a simulated fleet of about 2,000 nodes and 13 conductors whose heartbeats, locks, drains, crashes and restarts "+
		"change what the exporter shows within a minute.")
	cmd.Flag("demo.db-path", "Database file to create (it must not exist), removed on exit; default: in a new temporary directory.").
		StringVar(&dc.dbPath)
	cmd.Flag("demo.speed", fmt.Sprintf("Run the simulation this many times faster (heartbeats, heartbeat timeout, refresh interval and events), 1 to %d.", demo.MaxSpeed)).
		Default("1").IntVar(&dc.speed)
	return cmd
}

// demoIgnores are the flags the demo sets itself: given to it, they would
// be ignored, so it refuses them.
var demoIgnores = []string{"db.dsn", "db.dsn-file", "ironic.config-file", "ironic.config-dir",
	"ironic.heartbeat-timeout", "refresh.min-interval", "nova.dsn", "nova.config-file", "nova.computes-file", "nova.refresh-interval"}

// checkDemoArgs refuses the flags the demo would ignore (on the command
// line; their environment variables are ignored, as a shared environment
// may hold them) and a speed out of range.
func checkDemoArgs(args []string, dc demoConfig) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		for _, f := range demoIgnores {
			if a == "--"+f || strings.HasPrefix(a, "--"+f+"=") {
				return fmt.Errorf("demo: --%s is not used by the demo (it reads its own database with its own settings); remove it", f)
			}
		}
	}
	if dc.speed < 1 || dc.speed > demo.MaxSpeed {
		return fmt.Errorf("demo: --demo.speed %d: want 1 to %d", dc.speed, demo.MaxSpeed)
	}
	return nil
}

// runDemo creates the demo database, starts its simulator and serves it like
// any Ironic database, with a short heartbeat timeout and refresh interval,
// and the Ironic settings the simulator judges the fleet by.
func runDemo(cfg config, dc demoConfig, toolkitFlags *web.FlagConfig, logger *slog.Logger) error {
	if cfg.dsn != "" || cfg.dsnFile != "" {
		logger.Info("demo: ignoring IRONIC_EXPORTER_DB_DSN and IRONIC_EXPORTER_DB_DSN_FILE: the demo reads its own database")
	}
	cfg.ironicConfigFiles, cfg.ironicConfigDirs = nil, nil
	given, err := demoSettings(cfg)
	if err != nil {
		return err
	}
	d, err := demo.Start(demo.Options{Path: dc.dbPath, Speed: dc.speed, Logger: logger, Settings: given})
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	useDemo(&cfg, d)
	d.LogIntro(*toolkitFlags.WebListenAddresses, cfg.telemetryPath)
	return serve(cfg, toolkitFlags, logger)
}

// demoSettings are the Ironic settings of the flags the demo honours
// (--ironic.hash-partition-exponent, --ironic.hash-ring-algorithm and, when
// given, --ironic.release), for demo.Options: the demo fills in the rest.
func demoSettings(cfg config) (topology.Settings, error) {
	cfg.heartbeatTimeout = 0 // the demo's own (refused as a flag)
	cfg.pinReleaseVersion, cfg.hashDistributionReplicas, cfg.ironicConnection = "", 0, ""
	return topologySettings(cfg, flagSources)
}

// useDemo points cfg at the demo's database, read as on a multi-conductor
// MySQL (demo.MultiConductor), with the settings the demo's simulator
// judges the fleet by (demo.Demo.Settings), so that the page and the
// simulator agree on every node.
func useDemo(cfg *config, d *demo.Demo) {
	s := d.Settings()
	cfg.dsn, cfg.dsnFile = d.DSN(), ""
	cfg.heartbeatTimeout, cfg.heartbeatSet = s.HeartbeatTimeout, true
	cfg.partitionExponent, cfg.algorithm, cfg.release = s.PartitionExponent, string(s.Algorithm), s.Release.String()
	cfg.pinReleaseVersion, cfg.hashDistributionReplicas, cfg.ironicConnection = s.PinReleaseVersion, s.HashDistributionReplicas, s.Connection
	cfg.gracefulShutdownTimeout, cfg.periodicMaxWorkers, cfg.syncLocalStateInterval = s.GracefulShutdownTimeout, s.PeriodicMaxWorkers, s.SyncLocalStateInterval
	cfg.minInterval = d.MinInterval()
	cfg.source = demo.MultiConductor
	// The simulated Nova, read through its nova.conf as a real one.
	cfg.nova = novaConfig{configFiles: []string{d.NovaConfig()}, computesFile: d.NovaComputesFile(), interval: d.MinInterval()}
}
