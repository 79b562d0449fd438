package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

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
		Connection: cfg.ironicConnection, GracefulShutdownTimeout: cfg.gracefulShutdownTimeout,
		PeriodicMaxWorkers: cfg.periodicMaxWorkers, SyncLocalStateInterval: cfg.syncLocalStateInterval,
		MaxConcurrentDeploy: cfg.maxConcurrentDeploy, MaxConcurrentClean: cfg.maxConcurrentClean,
		MaxConcurrentPerConductorGroup: cfg.maxConcurrentPerGroup,
		ConductorCleanupInterval:       cfg.conductorCleanupInterval, ConductorCleanupTimeout: cfg.conductorCleanupTimeout},
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
		if conf.Connection.Deprecated() {
			logger.Warn("the database connection is written under a deprecated name, which Ironic ignores from 2024.1 (oslo.db 15.0): write it as [database] connection",
				"where", conf.Connection.Where())
		}
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
	if !givenBy(cfg.maxConcurrentDeploySet, "ironic.max-concurrent-deploy") && conf.MaxConcurrentDeploy.Set {
		cfg.maxConcurrentDeploy = conf.MaxConcurrentDeploy.Value
		note("max_concurrent_deploy", conf.MaxConcurrentDeploy)
	}
	if !givenBy(cfg.maxConcurrentCleanSet, "ironic.max-concurrent-clean") && conf.MaxConcurrentClean.Set {
		cfg.maxConcurrentClean = conf.MaxConcurrentClean.Value
		note("max_concurrent_clean", conf.MaxConcurrentClean)
	}
	if !givenBy(cfg.perGroupSet, "ironic.max-concurrent-per-conductor-group") && conf.MaxConcurrentPerConductorGroup.Set {
		cfg.maxConcurrentPerGroup = conf.MaxConcurrentPerConductorGroup.Value
		note("max_concurrent_per_conductor_group", conf.MaxConcurrentPerConductorGroup)
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
	if o := conf.GracefulShutdownTimeout; o.Set {
		cfg.gracefulShutdownTimeout = o.Value
		if o.Value <= 0 {
			cfg.gracefulShutdownTimeout = -1 // oslo.service's 0: wait for ever
		}
		note("graceful_shutdown_timeout", o)
	}
	if o := conf.PeriodicMaxWorkers; o.Set && o.Value > 0 {
		cfg.periodicMaxWorkers = o.Value
		note("periodic_max_workers", o)
	}
	if o := conf.SyncLocalStateInterval; o.Set && o.Value > 0 {
		cfg.syncLocalStateInterval = o.Value
		note("sync_local_state_interval", o)
	}
	if o := conf.ConductorCleanupInterval; o.Set {
		cfg.conductorCleanupInterval = o.Value
		if o.Value <= 0 {
			cfg.conductorCleanupInterval = -1 // Ironic's 0: the cleanup disabled
		}
		note("conductor_cleanup_interval", o)
	}
	if o := conf.ConductorCleanupTimeout; o.Set && o.Value > 0 {
		cfg.conductorCleanupTimeout = o.Value
		note("conductor_cleanup_timeout", o)
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
