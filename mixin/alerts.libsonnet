// The alerting rules of ironic-conductor-exporter, from _config.
//
// Two kinds of alert:
// - about one exporter replica (IronicExporter*): they carry its instance,
//   since each replica can fail on its own;
// - about Ironic (conductors, nodes, rings): every replica reading the same
//   database reports the same topology, so the expressions aggregate the
//   replica labels (_config.replicaLabels) away and a pair of replicas
//   fires each alert once. They only count replicas that read the database
//   now (ironic_up == 1): a replica that cannot serves a frozen topology,
//   and IronicExporterDatabaseUnreachable speaks for it instead.
local units = { s: 'second', m: 'minute', h: 'hour', d: 'day' };

// "5m" -> "5 minutes"; with article=true "1h" -> "hour" ("the last hour").
local humanize(d, article=false) =
  local n = std.parseInt(std.substr(d, 0, std.length(d) - 1));
  local u = units[d[std.length(d) - 1]];
  if n == 1 then (if article then u else '1 ' + u) else '%d %ss' % [n, u];

local strip(s) = std.rstripChars(s, '\n');

{
  prometheusAlerts+:: {
    local c = $._config,
    local replica = std.join(', ', c.replicaLabels),
    local target = std.join(', ', [c.clusterLabel, 'job'] + c.replicaLabels),
    local group = std.join(', ', [c.clusterLabel, 'job']),
    local v = c {
      replica: replica,
      target: target,
      group: group,
      up: 'ironic_up{%s} == 1' % c.selector,
      flappingWindowText: humanize(c.flappingWindow, true),
      churnWindowText: humanize(c.churnWindow, true),
      takeoverProgressWindowText: humanize(c.takeoverProgressWindow, true),
    },
    local alert(name, severity, expr, summary, description) = {
      alert: name,
      expr: strip(expr),
      labels: { severity: severity },
      annotations: {
        summary: summary,
        description: description,
        runbook_url: c.runbookURLBase + std.asciiLower(name),
      },
    } + (if std.objectHas(c['for'], name) then { 'for': c['for'][name] } else {}),

    groups+: [
      {
        name: 'ironic-conductor-exporter.exporter',
        rules: [
          alert(
            'IronicExporterDown',
            'warning',
            'up{%(selector)s} == 0' % v,
            'ironic-conductor-exporter cannot be scraped.',
            'Prometheus has failed to scrape the ironic-conductor-exporter {{ $labels.instance }} (job {{ $labels.job }}) for more than %s: conductor liveness and the node to conductor mapping are not monitored.' % humanize(c['for'].IronicExporterDown),
          ),
          alert(
            'IronicExporterAbsent',
            'warning',
            'absent(up{%(selector)s})' % v,
            'No ironic-conductor-exporter target is known to Prometheus.',
            'Prometheus has had no target in job {{ $labels.job }} for %s: service discovery lost the exporter, or the job is named differently from what the alerting rules expect.' % humanize(c['for'].IronicExporterAbsent),
          ),
          alert(
            'IronicExporterDatabaseUnreachable',
            'critical',
            'ironic_up{%(selector)s} == 0' % v,
            "ironic-conductor-exporter cannot read Ironic's database.",
            "The exporter {{ $labels.instance }} has failed to read Ironic's database for more than %s. It serves the last topology it read, frozen, and the conductor alerts are silenced until it can read again." % humanize(c['for'].IronicExporterDatabaseUnreachable),
          ),
          alert(
            'IronicExporterDataStale',
            'warning',
            'ironic_exporter_data_age_seconds{%(selector)s} > %(dataStaleSeconds)d' % v,
            'ironic-conductor-exporter serves an old topology.',
            "The topology served by {{ $labels.instance }} was read from Ironic's database {{ $value | humanizeDuration }} ago.",
          ),
        ],
      },
      {
        name: 'ironic-conductor-exporter.conductors',
        rules: [
          alert(
            'IronicConductorDown',
            'critical',
            |||
              max without (%(replica)s) (
                ironic_conductor_state{%(selector)s, state="dead"} == 1
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'An Ironic conductor is online but no longer heartbeats.',
            'Conductor {{ $labels.hostname }} (conductor group "{{ $labels.conductor_group }}") is registered online but its heartbeat is older than Ironic\'s heartbeat_timeout: it crashed, hangs, or was stopped without unregistering (SIGUSR1 then SIGTERM, a quick restart); the database cannot tell which. Ironic has taken it out of the hash rings and its nodes moved to other conductors.',
          ),
          alert(
            'IronicConductorHeartbeatStale',
            'warning',
            |||
              max without (%(replica)s) (
                (
                  ironic_exporter_last_refresh_success_timestamp_seconds{%(selector)s}
                  - on (%(target)s) group_right
                  ironic_conductor_heartbeat_timestamp_seconds{%(selector)s}
                ) > %(heartbeatStaleSeconds)d
                and on (%(target)s, hostname, conductor_group) ironic_conductor_online{%(selector)s} == 1
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'An online Ironic conductor has missed several heartbeats.',
            'Conductor {{ $labels.hostname }} (conductor group "{{ $labels.conductor_group }}") is online but its last heartbeat was {{ $value | humanizeDuration }} old when the database was last read. At heartbeat_timeout Ironic will declare it dead and move its nodes.',
          ),
          alert(
            'IronicConductorFlapping',
            'warning',
            |||
              max without (%(replica)s) (
                sum without (state) (changes(ironic_conductor_state{%(selector)s}[%(flappingWindow)s])) / 2 > %(flappingChanges)d
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'An Ironic conductor keeps changing state.',
            'Conductor {{ $labels.hostname }} (conductor group "{{ $labels.conductor_group }}") changed state (alive, draining, stopped, dead) {{ $value | humanize }} times in the last %(flappingWindowText)s; each change may move nodes between conductors.' % v,
          ),
          alert(
            'IronicConductorGroupWithoutAliveConductor',
            'critical',
            |||
              max by (%(group)s, conductor_group) (
                sum by (%(target)s, conductor_group) (ironic_nodes_without_conductor{%(selector)s})
                unless on (%(target)s, conductor_group)
                  max by (%(target)s, conductor_group) (ironic_conductor_hash_ring_member{%(selector)s}) == 1
                and on (%(target)s, conductor_group)
                  count by (%(target)s, conductor_group) (ironic_conductor_hash_ring_member{%(selector)s})
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'An Ironic conductor group has nodes but no conductor to serve them.',
            'No conductor of conductor group "{{ $labels.conductor_group }}" is alive and online, so no hash ring serves the group and its {{ $value | humanize }} node(s) can be neither managed nor deployed.',
          ),
        ],
      },
      {
        name: 'ironic-conductor-exporter.nodes',
        rules: [
          alert(
            'IronicNodesWithoutConductor',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nodes_without_conductor{%(selector)s} > 0
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'Some Ironic nodes have no conductor.',
            '{{ $value | humanize }} node(s) of conductor group "{{ $labels.conductor_group }}" with driver {{ $labels.driver }} are served by no conductor: no alive, online conductor of that group enables that hardware type.',
          ),
          // A holder is dead as Ironic itself judges it: _check_orphan_nodes
          // (ironic/conductor/manager.py) releases the locks of the hosts
          // get_offline_conductors returns (ironic/db/sqlalchemy/api.py): a
          // heartbeat older than heartbeat_timeout, or on SQLite from 22.1
          // (commit 0099d1812) online=false. A draining conductor is not
          // offline and still holds its locks; on SQLite 22.1+ `alive` goes
          // false for conductors that work. So the test is the state
          // (alive or draining: topology's Running), never `alive`.
          alert(
            'IronicNodeReservedByDeadConductor',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_conductor_reserved_nodes{%(selector)s} > 0
                unless on (%(target)s, hostname) ironic_conductor_state{%(selector)s, state=~"alive|draining"} == 1
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'Ironic nodes are locked by a conductor that is not running.',
            '{{ $labels.hostname }}, which is not a running conductor, holds the reservation (lock) of {{ $value | humanize }} node(s): every change to them fails with NodeLocked until the lock is released (a HOST:PORT conductor locks nodes as HOST, and Ironic releases locks by their exact name only: those it never releases).',
          ),
          alert(
            'IronicBootEnvironmentStranded',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nodes_affinity_unavailable{%(selector)s} > 0
                unless
                  ironic_nodes_affinity_unavailable{%(selector)s}
                  < max_over_time(ironic_nodes_affinity_unavailable{%(selector)s}[%(takeoverProgressWindow)s])
                and on (%(target)s) %(up)s
              )
            ||| % v,
            "Ironic nodes' boot environments are on a conductor that is not running.",
            '{{ $value | humanize }} deployed, rescued or in-progress node(s) of conductor group "{{ $labels.conductor_group }}" have their boot files and deploy logs on a conductor that is {{ if eq $labels.affinity "missing" }}gone from the database{{ else }}stopped or dead{{ end }}, and their number has not fallen for %s: Ironic takes over at most periodic_max_workers nodes per conductor every sync_local_state_interval, and no takeover is progressing.' % humanize(c['for'].IronicBootEnvironmentStranded),
          ),
          alert(
            'IronicNodesStuck',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nodes_stuck{%(selector)s} > 0
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'Ironic nodes are stuck in a provision state no running conductor will finish.',
            '{{ $value | humanize }} node(s) of conductor group "{{ $labels.conductor_group }}" have been in provision state "{{ $labels.provision_state }}" for %s with {{ if eq $labels.reason "lock_holder_not_alive" }}their lock held by a host that is not running{{ else if eq $labels.reason "lock_never_released" }}their lock held as HOST by a HOST:PORT conductor that is not running, which Ironic never releases{{ else if eq $labels.reason "no_lock_no_worker" }}no lock and no worker: nothing resumes them until a conductor mapping them (re)starts{{ else if eq $labels.reason "no_conductor" }}no conductor serving them{{ else }}a ring conductor that is not running{{ end }}.' % humanize(c['for'].IronicNodesStuck),
          ),
          alert(
            'IronicHashRingChurn',
            'info',
            |||
              max by (%(group)s, conductor_group) (
                sum by (%(target)s, conductor_group) (increase(ironic_node_conductor_changes_total{%(selector)s}[%(churnWindow)s]))
                > on (%(target)s, conductor_group)
                  2 * sum by (%(target)s, conductor_group) (ironic_hash_ring_nodes{%(selector)s})
                and on (%(target)s) %(up)s
              )
            ||| % v,
            "Ironic's hash ring keeps moving nodes between conductors.",
            '{{ $value | humanize }} node moves between conductors in conductor group "{{ $labels.conductor_group }}" in the last %(churnWindowText)s, more than twice the nodes the group\'s rings serve: conductors keep joining and leaving.' % v,
          ),
        ],
      },
      {
        // With --nova.dsn or --nova.config-file only: without Nova the
        // series are absent and these never fire. Silenced while the
        // exporter cannot read Ironic's database or the cell's.
        name: 'ironic-conductor-exporter.nova',
        rules: [
          alert(
            'IronicNovaComputeDown',
            'critical',
            |||
              max without (%(replica)s) (
                sum without (source) (ironic_nova_compute_nodes{%(selector)s, source="instance"})
                and on (%(target)s, cell, host) (ironic_nova_compute_up{%(selector)s} == 0)
                and on (%(target)s, cell) (ironic_exporter_nova_cell_up{%(selector)s} == 1)
                and on (%(target)s) %(up)s
              ) > 0
            ||| % v,
            'An ironic nova-compute is down with instances on its nodes.',
            'nova-compute {{ $labels.host }} (cell {{ $labels.cell }}) is down and {{ $value | humanize }} Ironic node(s) carry its instances: they cannot be rebuilt, rebooted or deleted until it is back (a hash ring never moves a node with an instance).',
          ),
          alert(
            'IronicNovaNodesUnschedulable',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nova_problems{%(selector)s, reason="node_no_compute_record"} > 0
                and on (%(target)s) (ironic_exporter_nova_api_up{%(selector)s} == 1)
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'Available Ironic nodes are not schedulable by Nova.',
            '{{ $value | humanize }} available Ironic node(s) without instance and out of maintenance have no compute_nodes record in any Nova cell: Nova cannot schedule to them ("No valid host").',
          ),
          alert(
            'IronicNovaRebalanceStuck',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nova_problems{%(selector)s, reason="compute_record_host_differs"} > 0
                and on (%(target)s) (ironic_exporter_nova_api_up{%(selector)s} == 1)
                unless on (%(target)s) (ironic_exporter_nova_compute_liveness_known{%(selector)s} == 0)
                and on (%(target)s) %(up)s
              )
            ||| % v,
            "Nova's compute records of Ironic nodes disagree with Nova's hash ring.",
            '{{ $value | humanize }} Ironic node(s) have a compute_nodes record naming another host than the nova-compute that owns them on its ring, for %s: a rebalance is pending or stuck.' % humanize(c['for'].IronicNovaRebalanceStuck),
          ),
        ],
      },
      {
        // Ironic's own limits on new work (21.1+: without them the series
        // are absent and these never fire).
        name: 'ironic-conductor-exporter.limits',
        rules: [
          alert(
            'IronicNodesFaulted',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_nodes_faulted{%(selector)s} > 0
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'Ironic put nodes in maintenance itself (a fault).',
            '{{ $value | humanize }} node(s) of conductor group "{{ $labels.conductor_group }}"{{ if $labels.conductor }} served by {{ $labels.conductor }}{{ end }} have been in maintenance for %s because Ironic recorded a {{ $labels.fault }}{{ if eq $labels.fault "power failure" }}: their BMC did not answer the power state sync, and their conductor lifts it by itself once the BMC answers again{{ else }}: maintenance is lifted by hand once the cause is fixed{{ end }}.' % humanize(c['for'].IronicNodesFaulted),
          ),
          alert(
            'IronicConductorHistoryErrors',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_conductor_history_errors{%(selector)s} >= %(historyErrorBurst)d
                and on (%(target)s) %(up)s
              )
            ||| % v,
            'An Ironic conductor records a burst of errors in node history.',
            'Conductor {{ $labels.hostname }} recorded {{ $value | humanize }} ERROR events in node_history within the exporter\'s --ironic.history-window, for %s: read them with baremetal node history list on the nodes the status page\'s lookup names, and the conductor\'s log.' % humanize(c['for'].IronicConductorHistoryErrors),
          ),
          alert(
            'IronicConcurrencyLimitReached',
            'warning',
            |||
              max without (%(replica)s) (
                ironic_concurrent_action_headroom{%(selector)s} <= 0
                and on (%(target)s) %(up)s
              )
            ||| % v,
            "Ironic refuses new deploys or cleanings: its concurrency limit is reached.",
            'For %s Ironic has refused every new {{ if eq $labels.action "deploy" }}deploy{{ else }}tear-down and cleaning{{ end }} of the nodes of conductor group "{{ $labels.conductor_group }}" (ConcurrentActionLimit): the nodes its conductors count reached [conductor]max_concurrent_{{ $labels.action }} ({{ $value | humanize }} left).' % humanize(c['for'].IronicConcurrencyLimitReached),
          ),
        ],
      },
    ],
  },
}
