// The settings of the ironic-conductor-exporter mixin. Override any of them:
//
//   (import 'ironic-conductor-exporter/mixin/mixin.libsonnet') + {
//     _config+:: { jobName: 'ironic', clusterLabel: 'region' },
//   }
{
  _config+:: {
    // The Prometheus job that scrapes the exporter.
    jobName: 'ironic-conductor-exporter',
    // The selector every alert expression carries: add namespace="...",
    // service="..." or anything else that picks out the exporter's series.
    selector: 'job="%s"' % self.jobName,
    // The label that tells clusters (or regions, sites) apart, from
    // Prometheus' external or target labels. Kept on every alert and
    // offered as a dashboard variable; absent labels are fine.
    clusterLabel: 'cluster',
    // Labels that differ between replicas of the exporter reading the same
    // database: the conductor, node and ring alerts aggregate them away so
    // that a pair of replicas fires each alert once.
    replicaLabels: ['instance', 'pod'],
    // Base of every runbook_url annotation; the alert name, lower case, is
    // appended (the anchors of docs/runbook.md).
    runbookURLBase: 'https://github.com/ironic-conductor-exporter/ironic-conductor-exporter/blob/v0.1.0/docs/runbook.md#',
    // The TCP port the exporter listens on (deploy snippets, Helm chart).
    exporterPort: 10067,

    // `for:` of each alert (IronicConductorFlapping has none: its
    // expression looks back over flappingWindow).
    'for': {
      IronicExporterDown: '5m',
      IronicExporterAbsent: '15m',
      IronicExporterDatabaseUnreachable: '5m',
      IronicExporterDataStale: '3m',
      IronicConductorDown: '1m',
      IronicConductorHeartbeatStale: '30s',
      IronicConductorGroupWithoutAliveConductor: '2m',
      IronicNodesWithoutConductor: '5m',
      IronicNodeReservedByDeadConductor: '5m',
      IronicBootEnvironmentStranded: '15m',
      IronicNodesStuck: '10m',
      IronicHashRingChurn: '5m',
      IronicNovaComputeDown: '2m',
      IronicNovaNodesUnschedulable: '15m',
      IronicNovaRebalanceStuck: '30m',
      IronicConcurrencyLimitReached: '5m',
      IronicNodesFaulted: '15m',
      IronicConductorHistoryErrors: '5m',
    },
    // Thresholds.
    dataStaleSeconds: 120,
    heartbeatStaleSeconds: 30,
    flappingWindow: '30m',
    flappingChanges: 4,
    churnWindow: '1h',
    // IronicConductorHistoryErrors fires when a conductor recorded at least
    // this many ERROR events in node_history within the exporter's
    // --ironic.history-window (1h by default).
    historyErrorBurst: 10,
    // IronicBootEnvironmentStranded waits while the stranded count falls
    // within this window: Ironic's takeover is paced (periodic_max_workers
    // nodes per conductor every sync_local_state_interval, 8 per 180s by
    // default), so a large failover takes many rounds. Keep it several
    // times sync_local_state_interval.
    takeoverProgressWindow: '15m',

    // Dashboards.
    dashboardTags: ['ironic-conductor-exporter'],
  },
}
