package main

import (
	"log/slog"

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
	cmd.Flag("demo.speed", "Run the simulation this many times faster (heartbeats, heartbeat timeout, refresh interval and events).").
		Default("1").IntVar(&dc.speed)
	return cmd
}

// runDemo creates the demo database, starts its simulator and serves it like
// any Ironic database, with a short heartbeat timeout and refresh interval.
func runDemo(cfg config, dc demoConfig, toolkitFlags *web.FlagConfig, logger *slog.Logger) error {
	if cfg.dsn != "" || cfg.dsnFile != "" {
		logger.Info("demo: ignoring --db.dsn, IRONIC_EXPORTER_DB_DSN and --db.dsn-file: the demo reads its own database")
	}
	d, err := demo.Start(demo.Options{Path: dc.dbPath, Speed: dc.speed, Logger: logger})
	if err != nil {
		return err
	}
	defer d.Close()
	cfg.dsn, cfg.dsnFile = d.DSN(), ""
	cfg.heartbeatTimeout, cfg.heartbeatSet = d.HeartbeatTimeout(), true
	cfg.minInterval = d.MinInterval()
	cfg.source = func(src topology.Source) topology.Source { return demo.MultiConductor(src) }
	if cfg.release == "" {
		// the simulator plays SQLite without heartbeats (22.1+) and an API
		// alive that ignores online (before 25.0)
		cfg.release = "24.1"
	}
	d.LogIntro(*toolkitFlags.WebListenAddresses, cfg.telemetryPath)
	return serve(cfg, toolkitFlags, logger)
}
