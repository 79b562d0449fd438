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
	"ironic.heartbeat-timeout", "refresh.min-interval"}

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
// any Ironic database, with a short heartbeat timeout and refresh interval.
func runDemo(cfg config, dc demoConfig, toolkitFlags *web.FlagConfig, logger *slog.Logger) error {
	if cfg.dsn != "" || cfg.dsnFile != "" {
		logger.Info("demo: ignoring IRONIC_EXPORTER_DB_DSN and IRONIC_EXPORTER_DB_DSN_FILE: the demo reads its own database")
	}
	cfg.ironicConfigFiles, cfg.ironicConfigDirs = nil, nil
	d, err := demo.Start(demo.Options{Path: dc.dbPath, Speed: dc.speed, Logger: logger})
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
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
