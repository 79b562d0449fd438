package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/memlimit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// novaConfig is the command line of the optional Nova side: without
// --nova.dsn or a --nova.config-file giving [api_database]connection,
// nothing of Nova is read or served.
type novaConfig struct {
	dsn, dsnFile string
	// cellTemplate gives the cells' connections (novadb.Config.CellTemplate).
	cellTemplate, cellTemplateFile string
	configFiles                    []string
	computesFile                   string
	interval                       time.Duration
}

func addNovaFlags(app *kingpin.Application, c *novaConfig) {
	app.Flag("nova.dsn", "Nova's nova_api database, as in nova.conf [api_database]connection (SQLAlchemy URL); its cell_mappings give the cells' databases. "+
		"Default: from --nova.config-file; neither: no Nova side.").StringVar(&c.dsn)
	app.Flag("nova.dsn-file", "File holding --nova.dsn (for secrets mounted as files: the ironic nova-compute's nova.conf has no [api_database]).").
		StringVar(&c.dsnFile)
	app.Flag("nova.cell-dsn-template", "Connection of every Nova cell instead of the URL in cell_mappings (Nova's own read-write user): "+
		"a template filled with the parts of each cell's URL as Nova fills database_connection templates ({scheme}, {hostname}, {port}, {path}, {query}, ...), "+
		"e.g. mysql+pymysql://exporter:secret@{hostname}:{port}/{path}; a cell it cannot be filled for is not read. Default: cell_mappings' URLs.").
		StringVar(&c.cellTemplate)
	app.Flag("nova.cell-dsn-template-file", "File holding --nova.cell-dsn-template.").StringVar(&c.cellTemplateFile)
	app.Flag("nova.config-file", "Nova's configuration file (nova.conf), read as oslo.config reads it for [api_database]connection, [database]connection "+
		"(the values of templated cell connections), [DEFAULT]service_down_time, report_interval and servicegroup_driver; repeatable, later files win.").
		StringsVar(&c.configFiles)
	app.Flag("nova.computes-file", "YAML file giving each ironic nova-compute's [DEFAULT]host and [ironic] conductor_group, shard and peer_list "+
		"(docs/nova-computes.md); default: every ironic nova-compute, taken with no [ironic] option set.").StringVar(&c.computesFile)
	app.Flag("nova.refresh-interval", "A scrape or lookup reads Nova's databases only when the Nova answer is older than this (as --refresh.min-interval for Ironic's).").Default("15s").DurationVar(&c.interval)
}

// setupNova opens the Nova side when configured: nil, nil when it is not.
// A read of Nova's databases is bounded by timeout, as a refresh of
// Ironic's (--refresh.timeout).
func setupNova(c novaConfig, opts dbconn.Options, timeout time.Duration, ironic *topology.Cache, onRefresh func(novacache.Refresh), logger *slog.Logger) (*novacache.Cache, *novadb.Reader, error) {
	var conf *ironicconf.NovaConfig
	if len(c.configFiles) > 0 {
		var err error
		if conf, err = ironicconf.LoadNova(c.configFiles, nil); err != nil {
			return nil, nil, err
		}
	}
	apiDSN, err := secretFlag("--nova.dsn", c.dsn, c.dsnFile)
	if err != nil {
		return nil, nil, err
	}
	cellTemplate, err := secretFlag("--nova.cell-dsn-template", c.cellTemplate, c.cellTemplateFile)
	if err != nil {
		return nil, nil, err
	}
	connection := ""
	settings := rules.DefaultNovaSettings()
	var from []any
	if conf != nil {
		if apiDSN == "" && conf.APIConnection.Set {
			apiDSN = conf.APIConnection.Value
			from = append(from, "api_database", conf.APIConnection.Where())
		}
		connection = conf.Connection.Value
		if conf.ServiceDownTime.Set {
			settings.ServiceDownTime = conf.ServiceDownTime.Value
			from = append(from, "service_down_time", conf.ServiceDownTime.Where())
		}
		if conf.ServicegroupDriver.Set {
			settings.ServicegroupDriver = conf.ServicegroupDriver.Value
			from = append(from, "servicegroup_driver", conf.ServicegroupDriver.Where())
		}
		if conf.ReportInterval.Set {
			settings.ReportInterval = conf.ReportInterval.Value
			from = append(from, "report_interval", conf.ReportInterval.Where())
		}
		for _, o := range []ironicconf.Opt[string]{conf.APIConnection, conf.Connection} {
			if o.Set && o.Deprecated() {
				logger.Warn("a Nova database connection is written under a deprecated name, which Nova ignores from 2024.1 (oslo.db 15.0)", "where", o.Where())
			}
		}
		logger.Info("read Nova's configuration", append([]any{"files", strings.Join(conf.Files, ",")}, from...)...)
	}
	if apiDSN == "" {
		if conf != nil {
			return nil, nil, errors.New("--nova.config-file: no [api_database]connection in " + strings.Join(conf.Files, ",") + " (a nova-compute's nova.conf has none: give --nova.dsn-file or --nova.dsn)")
		}
		if c.computesFile != "" || cellTemplate != "" {
			return nil, nil, errors.New("--nova.computes-file and --nova.cell-dsn-template need --nova.dsn, --nova.dsn-file or --nova.config-file")
		}
		return nil, nil, nil
	}
	var computes *nova.ComputesFile
	if c.computesFile != "" {
		f, err := os.Open(c.computesFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--nova.computes-file: %w", err)
		}
		computes, err = nova.ParseComputes(f, c.computesFile)
		_ = f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("--nova.computes-file: %w", err)
		}
	}
	reader, err := novadb.Open(novadb.Config{APIConnection: apiDSN, Connection: connection, CellTemplate: cellTemplate, Options: opts})
	if err != nil {
		return nil, nil, err
	}
	if !settings.LivenessKnown() {
		logger.Warn("Nova's servicegroup_driver keeps the computes' heartbeats out of the database: their liveness is unknown "+
			"(ironic_exporter_nova_compute_liveness_known 0, no ironic_nova_compute_up but for computes forced down); the rings take every compute as up",
			"servicegroup_driver", settings.ServicegroupDriver)
	}
	if computes == nil {
		logger.Warn("no --nova.computes-file: every ironic nova-compute is taken with no [ironic] conductor_group, shard or peer_list; " +
			"the Nova answers are exact only for computes whose nova.conf sets none (ironic_exporter_nova_computes_settings_info)")
	}
	cells := "cell_mappings (Nova's own credentials)"
	if cellTemplate != "" {
		cells = dbconn.Redact(cellTemplate)
	}
	logger.Info("reading Nova's databases", "nova_api", reader.String(), "cells", cells, "interval", c.interval,
		"service_down_time", settings.ServiceDownTime, "report_interval", settings.ReportInterval)
	cache := novacache.New(novacache.Config{Reader: reader, Ironic: func(ctx context.Context) *topology.Topology { return ironic.Get(ctx).Topology },
		Settings: settings, Computes: computes, Interval: c.interval, Timeout: timeout, Logger: logger,
		AnswerReplaced: memlimit.Settle, Idle: ironic.Idle, OnRefresh: onRefresh})
	return cache, reader, nil
}

// secretFlag is the value of flag, given on the command line or in file
// (trimmed), not both; "" when neither.
func secretFlag(flag, value, file string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("give %s or %s-file, not both", flag, flag)
	case file == "":
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s-file: %w", flag, err)
	}
	if value = strings.TrimSpace(string(b)); value == "" {
		return "", fmt.Errorf("%s-file: %s is empty", flag, file)
	}
	return value, nil
}
