#!/usr/bin/python3
"""Live-fleet conformance: real ironic-api and ironic-conductors beside the sidecar.

Runs with the python3 that has the Ironic release (the host's for 21.4). It
starts one ironic-api and three ironic-conductors (json-rpc, each on its own
loopback address as [DEFAULT]host and [json_rpc]host_ip, fake-hardware with
[fake] delays), enrolls nodes with the stock `baremetal` CLI, drives them
through scenarios (SIGTERM during tear-downs past graceful_shutdown_timeout,
SIGKILL holding deploy locks, SIGUSR1 stop), and polls, about once a second,
the database (as Ironic writes it), Ironic's API and the sidecar's /metrics,
JSON API and page. Each comparison has a documented lag (LAGS); a
difference that lasts longer fails the run. Prints a table of what agreed
and the longest difference seen per comparison.

Usage: livefleet.py --sidecar BIN --db-url URL --workdir DIR [--net 127.42.0]
         [--api-port P] [--sidecar-port P] [--trace FILE]
"""

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import sqlalchemy as sa

HEARTBEAT_TIMEOUT = 12
GRACEFUL = 3
DEPLOY_DELAY = 12
SYNC_INTERVAL = 10
MAX_WORKERS = 4
RING_RESET = 5
REFRESH = 1
# [conductor]max_concurrent_deploy of the storm scenario's fleet (21.1+)
STORM_LIMIT = 3
DEPLOYS = ('deploying', 'wait call-back')
# the emptied group's scenario: the last conductor alone serves LONE_GROUP,
# where the last LONE_NODES nodes are
LONE_GROUP = 'lone'
LONE_NODES = 3
# [conductor]conductor_cleanup_interval and _timeout of the cleanup
# scenario's fleet (32.0+; the timeout's minimum is 60 and Ironic wants at
# least 3x heartbeat_timeout)
CLEANUP_INTERVAL = 10
CLEANUP_TIMEOUT = 60
# [conductor]sync_power_state_interval and power_state_sync_max_retries of
# the power failure scenario's fleet (elsewhere the power sync is off): a
# node whose power state cannot be read is faulted at its second failed sync
POWER_SYNC_INTERVAL = 2
POWER_SYNC_RETRIES = 1
POWERFAIL_NODES = 3
STEP_STATES = ('deploying', 'cleaning', 'verifying', 'inspecting', 'adopting',
               'rescuing', 'unrescuing', 'deleting', 'servicing')
IN_PROGRESS = STEP_STATES + ('wait call-back', 'clean wait', 'inspect wait',
                             'rescue wait', 'service wait')
# states whose boot files (conductor_affinity) still serve the node: deployed,
# rescued, held, in progress (elsewhere the next operation prepares anew)
BOOT_STATES = IN_PROGRESS + ('active', 'rescue', 'deploy hold', 'clean hold', 'service hold')
# How long each comparison may differ (seconds): the sidecar's refresh (and
# the poll's own second), plus Ironic's ring cache for node -> conductor,
# plus the exporter's NoLockBound for a step left with no worker (its rule
# waits that long after the node's last change).
NO_LOCK_BOUND = max(GRACEFUL, HEARTBEAT_TIMEOUT)
LAGS = {
    'conductor alive': REFRESH + 2,
    'conductor state': REFRESH + 2,
    'node conductor': REFRESH + RING_RESET + 2,
    'locks': REFRESH + 2,
    'stuck no lock': REFRESH + NO_LOCK_BOUND + 3,
    'stuck lock holder': REFRESH + 2,
    'stuck never released': REFRESH + 2,
    'stuck no conductor': REFRESH + RING_RESET + 2,
    'page all clear': REFRESH + NO_LOCK_BOUND + 3,
    'boot files stranded': REFRESH + 2,
    'deploys in flight': REFRESH + 3,
    'deploy refused': REFRESH + 3,
    'faulted': REFRESH + 2,
    'history errors': REFRESH + 2,
}


def log(*a):
    print(time.strftime('%H:%M:%S'), *a, flush=True)


def get(url, accept='application/json'):
    req = urllib.request.Request(url, headers={
        'Accept': accept, 'X-OpenStack-Ironic-API-Version': '1.49'})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


class Trace:
    """--trace FILE: JSON lines of what the sidecar showed, for the demo's
    simulator to be held to (demo/testdata): one line per poll whose view
    differs from the line before (no timings), and a "mark" line for each
    signal or start the harness gives a conductor during a scenario."""

    def __init__(self, a):
        self.out = open(a.trace, 'a') if a.trace else None
        backend = 'sqlite' if a.db_url == 'sqlite' else sa.engine.make_url(a.db_url).get_backend_name()
        self.base = {'release': a.release, 'backend': backend}
        self.scenario = None
        self.last = None

    def write(self, line):
        if self.out and self.scenario:
            self.out.write(json.dumps(dict(self.base, scenario=self.scenario, **line), sort_keys=True) + '\n')
            self.out.flush()

    def view(self, view):
        if view != self.last:
            self.write(view)
            self.last = view

    def mark(self, what, conductor):
        self.write({'mark': what, 'conductor': conductor})
        self.last = None


class Fleet:
    def __init__(self, a):
        self.a = a
        self.trace = Trace(a)
        # with --chroot the Ironic processes run in the release's chroot:
        # work is the path they see, real the host's path of the same folder
        self.root = a.chroot or ''
        self.py = ['chroot', self.root, '/usr/bin/python3'] if a.chroot else [sys.executable]
        self.work = a.workdir
        os.makedirs(self.real(self.work), exist_ok=True)
        # every conductor a scenario may start; the first --conductors of
        # them start with the fleet
        self.names = ['%s.%d' % (a.net, i) for i in (2, 3, 4)]
        self.hosts = self.names[:a.conductors]
        self.procs = {}
        self.api = 'http://127.0.0.1:%d' % a.api_port
        self.sidecar = 'http://127.0.0.1:%d' % a.sidecar_port
        # --db-url sqlite: a SQLite file in the work folder; Ironic sees it
        # at its path in the chroot, the harness and the sidecar at the host's
        self.sqlite = a.db_url == 'sqlite'
        self.db_url = self.host_db_url = a.db_url
        if self.sqlite:
            db = os.path.join(self.work, 'ironic.sqlite')
            self.db_url, self.host_db_url = 'sqlite:///' + db, 'sqlite:///' + self.real(db)
        rel = tuple(int(x) for x in a.release.split('.')[:2])
        # 22.1+ on SQLite (0099d1812): no heartbeats (online alone tells
        # alive from stopped) and each process keeps the rings it built
        # first, so Ironic's API names the conductors it saw then
        self.heartbeats = not (self.sqlite and rel >= (22, 1))
        self.eng = sa.create_engine(self.host_db_url)
        self.conf = os.path.join(self.work, 'ironic.conf')
        # ironic.cmd became ironic.command (36.0+)
        self.cmd = 'ironic.command' if os.path.isdir(
            self.real('/usr/lib/python3/dist-packages/ironic/command')) else 'ironic.cmd'

    def write_conf(self):
        lines = ['[DEFAULT]', 'auth_strategy = noauth', 'rpc_transport = json-rpc',
                 'enabled_hardware_types = fake-hardware',
                 'graceful_shutdown_timeout = %d' % GRACEFUL,
                 'hash_ring_reset_interval = %d' % RING_RESET,
                 'debug = false', 'use_stderr = false']
        for iface in ('bios', 'boot', 'console', 'deploy', 'inspect', 'management',
                      'power', 'raid', 'rescue', 'vendor'):
            lines.append('enabled_%s_interfaces = fake' % iface)
        lines += ['enabled_network_interfaces = noop', 'enabled_storage_interfaces = noop',
                  '[conductor]', 'heartbeat_interval = 1',
                  'heartbeat_timeout = %d' % HEARTBEAT_TIMEOUT,
                  'sync_local_state_interval = %d' % SYNC_INTERVAL,
                  'check_provision_state_interval = 3',
                  'periodic_max_workers = %d' % MAX_WORKERS,
                  'automated_clean = false']
        if 'powerfail' in self.a.scenarios.split(','):
            lines += ['sync_power_state_interval = %d' % POWER_SYNC_INTERVAL,
                      'power_state_sync_max_retries = %d' % POWER_SYNC_RETRIES]
        else:
            lines.append('sync_power_state_interval = -1')
        if 'storm' in self.a.scenarios.split(','):
            lines.append('max_concurrent_deploy = %d' % STORM_LIMIT)
        if 'cleanup' in self.a.scenarios.split(','):
            lines += ['conductor_cleanup_interval = %d' % CLEANUP_INTERVAL,
                      'conductor_cleanup_timeout = %d' % CLEANUP_TIMEOUT]
        lines += ['[fake]', 'deploy_delay = %d' % DEPLOY_DELAY,
                  '[dhcp]', 'dhcp_provider = none',
                  '[json_rpc]', 'auth_strategy = noauth', 'port = %d' % self.a.rpc_port,
                  '[api]', 'host_ip = 127.0.0.1', 'port = %d' % self.a.api_port,
                  '[oslo_concurrency]', 'lock_path = %s' % os.path.join(self.work, 'locks'),
                  '[database]', 'connection = %s' % self.db_url]
        with open(self.real(self.conf), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        for h in self.names:
            with open(self.real(os.path.join(self.work, h + '.conf')), 'w') as f:
                f.write('[DEFAULT]\nhost = %s\n[json_rpc]\nhost_ip = %s\n' % (h, h))
                if h == self.hosts[-1] and 'emptygroup' in self.a.scenarios.split(','):
                    f.write('[conductor]\nconductor_group = %s\n' % LONE_GROUP)

    def real(self, path):
        return self.root + path

    def schema(self):
        if self.sqlite:
            if os.path.exists(self.real(self.db_url[len('sqlite:///'):])):
                os.remove(self.real(self.db_url[len('sqlite:///'):]))
            return self.dbsync()
        url = sa.engine.make_url(self.a.db_url)
        db = url.database
        admin = sa.create_engine(url.set(database='postgres' if url.get_backend_name() == 'postgresql' else 'mysql'),
                                 isolation_level='AUTOCOMMIT')
        with admin.connect() as c:
            if url.get_backend_name() == 'postgresql':
                c.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"), {'d': db})
            c.execute(sa.text('DROP DATABASE IF EXISTS %s' % db))
            c.execute(sa.text('CREATE DATABASE %s' % db))
        admin.dispose()
        self.dbsync()

    def dbsync(self):
        subprocess.run(self.py + ['-c', 'import sys; from %s import dbsync; ' % self.cmd +
                        'sys.argv = ["ironic-dbsync", "--config-file", sys.argv[1], "create_schema"]; dbsync.main()',
                        self.conf], check=True, capture_output=True)

    def start(self, name, args):
        logf = open(self.real(os.path.join(self.work, name + '.log')), 'a')
        self.procs[name] = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def start_conductor(self, h):
        self.trace.mark('start', h)
        self.start(h, self.py + ['-m', self.cmd + '.conductor', '--config-file', self.conf,
                       '--config-file', os.path.join(self.work, h + '.conf')])

    def signal(self, name, sig):
        self.trace.mark(signal.Signals(sig).name, name)
        p = self.procs[name]
        os.killpg(p.pid, sig)

    def wait_exit(self, name, timeout):
        try:
            self.procs[name].wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop_all(self):
        for name, p in self.procs.items():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def running(self, name):
        return name in self.procs and self.procs[name].poll() is None

    def baremetal(self, *args):
        cmd = ['baremetal', '--os-endpoint', self.api, '--os-auth-type', 'none',
               '--os-baremetal-api-version', '1.49'] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError('%s: %s' % (' '.join(args), r.stderr.strip()))
        return r.stdout

    def provision(self, uuid, target):
        """PUT /v1/nodes/{uuid}/states/provision (the CLI's call, without a
        python start-up per node)."""
        req = urllib.request.Request(
            '%s/v1/nodes/%s/states/provision' % (self.api, uuid), method='PUT',
            data=json.dumps({'target': target}).encode(),
            headers={'Content-Type': 'application/json', 'X-OpenStack-Ironic-API-Version': '1.49'})
        urllib.request.urlopen(req, timeout=30).read()

    def wait_until(self, what, pred, timeout, checker=None):
        end = time.time() + timeout
        while time.time() < end:
            if checker:
                checker.poll()
            else:
                time.sleep(1)
            if pred():
                return
        raise RuntimeError('timed out waiting for ' + what)

    def db_nodes(self):
        with self.eng.connect() as c:
            return [dict(r._mapping) for r in c.execute(sa.text(
                'SELECT uuid, provision_state, reservation, conductor_affinity, updated_at FROM nodes ORDER BY id'))]

    def db_history_errors(self):
        """node_history's ERROR events by the conductor that recorded them
        (node_history_record writes [DEFAULT]host)."""
        with self.eng.connect() as c:
            return {r[0]: r[1] for r in c.execute(sa.text(
                "SELECT conductor, COUNT(*) FROM node_history WHERE severity = 'ERROR' GROUP BY conductor"))}

    def db_conductors(self):
        with self.eng.connect() as c:
            rows = [dict(r._mapping) for r in c.execute(sa.text(
                'SELECT id, hostname, online, updated_at FROM conductors ORDER BY id'))]
        for r in rows:
            # SQLite hands a DATETIME back as its text
            if isinstance(r['updated_at'], str):
                r['updated_at'] = datetime.datetime.fromisoformat(r['updated_at'])
        return rows


def parse_metrics(text):
    out = {}
    for line in text.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        m = re.match(r'^([a-zA-Z_:]+)(\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ''))
        out.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return out


class Checker:
    """Polls truth and sidecar; tracks how long each comparison differs."""

    def __init__(self, fleet, scenario, results):
        self.f = fleet
        self.scenario = scenario
        self.results = results
        self.since = {}   # comparison -> first time it differed (in the current run of differences)
        self.worst = {k: 0.0 for k in LAGS}
        self.dead = set()  # conductors whose process the harness stopped (their workers are gone)
        self.failures = []
        fleet.trace.scenario = scenario

    def compare(self, name, truth, seen, now):
        """A difference lasts from the first poll that sees it to the last
        one that does (polls are about a second apart; scenario steps may
        space them more, which the figure then does not count)."""
        if truth == seen:
            self.since.pop(name, None)
            return
        first = self.since.setdefault(name, now)
        if now - first > LAGS[name]:
            self.failures.append('%s: %s differs for %.0fs (lag %ds): truth %r, sidecar %r'
                                 % (self.scenario, name, now - first, LAGS[name], truth, seen))
            self.since[name] = now  # report once per lag
        self.worst[name] = max(self.worst[name], now - first)

    def poll(self):
        t0 = time.time()
        nodes = self.f.db_nodes()
        conds = self.f.db_conductors()
        api_conds = json.loads(get(self.f.api + '/v1/conductors?fields=hostname,alive'))['conductors']
        api_nodes = json.loads(get(self.f.api + '/v1/nodes/detail'))['nodes']
        metrics = parse_metrics(get(self.f.sidecar + '/metrics', 'text/plain'))
        sc_conds = json.loads(get(self.f.sidecar + '/v1/conductors?fields=hostname,alive'))['conductors']
        sc_nodes = json.loads(get(self.f.sidecar + '/v1/nodes/detail'))['nodes']
        page = get(self.f.sidecar + '/', 'text/html')
        now = time.time()
        # Ironic's API is the truth for alive and node -> conductor
        self.compare('conductor alive', sorted((c['hostname'], c['alive']) for c in api_conds),
                     sorted((c['hostname'], c['alive']) for c in sc_conds), now)
        if self.f.heartbeats:
            self.compare('node conductor', sorted((n['uuid'], n['conductor']) for n in api_nodes),
                         sorted((n['uuid'], n['conductor']) for n in sc_nodes), now)
        else:
            # SQLite 22.1+: Ironic's API keeps the rings it built first
            # (HashRingManager.get_ring), no truth to compare with: n/a
            self.worst['node conductor'] = None
        # the database: states as named, locks by holder
        dbnow = db_now(self.f.eng)
        state = {}
        for c in conds:
            fresh = (dbnow - c['updated_at']).total_seconds() <= HEARTBEAT_TIMEOUT
            state[c['hostname']] = {(1, True): 'alive', (1, False): 'dead',
                                    (0, True): 'draining', (0, False): 'stopped'}[(int(c['online']), fresh)]
            if not self.f.heartbeats:
                # where nothing heartbeats (SQLite 22.1+) online alone tells
                state[c['hostname']] = 'alive' if c['online'] else 'stopped'
        sc_state = {l['hostname']: l['state'] for l, v in metrics.get('ironic_conductor_state', []) if v == 1}
        self.compare('conductor state', state, sc_state, now)
        # a lock belongs to the conductor of that name, else to the one
        # registered as NAME:PORT (23.0+ with [json_rpc]port != 8089)
        attr = {}
        for n in nodes:
            r = n['reservation']
            if r and r not in attr:
                attr[r] = r if r in state else next((h for h in state if h.startswith(r + ':')), r)
        locks = {}
        for n in nodes:
            if n['reservation']:
                h = attr[n['reservation']]
                locks[h] = locks.get(h, 0) + 1
        sc_locks = {l['hostname']: int(v) for l, v in metrics.get('ironic_conductor_reserved_nodes', []) if v > 0}
        self.compare('locks', locks, sc_locks, now)
        # stuck: a step with no lock whose worker's process the harness stopped;
        # a lock whose holder's process is gone, on a node in progress
        # a node no conductor serves (Ironic's API names none: its only
        # conductor, or its group's, stopped) is stuck for that reason first
        # (the sidecar's no_conductor), whatever became of its worker; where
        # the API's rings are no truth (SQLite 22.1+) nothing is counted so
        served = {n['uuid']: n['conductor'] is not None or not self.f.heartbeats for n in api_nodes}
        no_cond = sum(1 for n in nodes if n['provision_state'] in IN_PROGRESS and not n['reservation']
                      and not served.get(n['uuid'], True))
        no_lock = sum(1 for n in nodes if n['provision_state'] in STEP_STATES and not n['reservation']
                      and self.worked_by_dead(n) and served.get(n['uuid'], True))
        holder = sum(1 for n in nodes if n['provision_state'] in IN_PROGRESS and n['reservation']
                     and n['reservation'] in state and state[n['reservation']] in ('dead', 'stopped'))
        never = sum(1 for n in nodes if n['provision_state'] in IN_PROGRESS and n['reservation']
                    and attr[n['reservation']] != n['reservation']
                    and state[attr[n['reservation']]] in ('dead', 'stopped'))
        stuck = {}
        for l, v in metrics.get('ironic_nodes_stuck', []):
            stuck[l['reason']] = stuck.get(l['reason'], 0) + int(v)
        self.compare('stuck no lock', no_lock, stuck.get('no_lock_no_worker', 0), now)
        self.compare('stuck lock holder', holder, stuck.get('lock_holder_not_alive', 0), now)
        self.compare('stuck never released', never, stuck.get('lock_never_released', 0), now)
        self.compare('stuck no conductor', no_cond, stuck.get('no_conductor', 0), now)
        trouble = no_lock > 0 or holder > 0 or never > 0 or no_cond > 0 or any(s != 'alive' for s in state.values())
        if 'powerfail' in self.f.a.scenarios.split(','):
            # nodes Ironic faulted (its API's fault, 1.42+) by their
            # conductor, and node_history's ERROR events by recorder
            faulted = {}
            for n in api_nodes:
                if n.get('fault'):
                    k = (n['conductor'] or '', n['fault'])
                    faulted[k] = faulted.get(k, 0) + 1
            sc_faulted = {}
            for l, v in metrics.get('ironic_nodes_faulted', []):
                if v > 0:
                    k = (l['conductor'], l['fault'])
                    sc_faulted[k] = sc_faulted.get(k, 0) + int(v)
            self.compare('faulted', faulted, sc_faulted, now)
            self.compare('history errors', self.f.db_history_errors(), {
                l['hostname']: int(v) for l, v in metrics.get('ironic_conductor_history_errors', []) if v > 0}, now)
            trouble = trouble or bool(faulted)
        # one way: the page may have other problems to tell, never "All clear" in trouble
        self.compare('page all clear', False, trouble and 'All clear' in page, now)
        # boot files: nodes that still need them whose conductor_affinity is
        # a conductor the database calls dead or stopped, or none at all
        by_id = {c['id']: state[c['hostname']] for c in conds}
        stranded = sum(1 for n in nodes if n['provision_state'] in BOOT_STATES and n['conductor_affinity'] is not None
                       and by_id.get(n['conductor_affinity'], 'gone') in ('dead', 'stopped', 'gone'))
        sc_stranded = int(sum(v for l, v in metrics.get('ironic_nodes_affinity_unavailable', [])))
        self.compare('boot files stranded', stranded, sc_stranded, now)
        self.f.trace.view({'states': sc_state, 'locks': sc_locks, 'stranded': sc_stranded,
                           'stuck': {r: n for r, n in stuck.items() if n}})
        # Ironic's concurrency limit of deploys (21.1+): the nodes it counts
        # (deploying, wait call-back) and whether it refuses a new deploy
        # now, against the sidecar's count and headroom
        limit = STORM_LIMIT if 'storm' in self.f.a.scenarios.split(',') else 250
        deploys = sum(1 for n in nodes if n['provision_state'] in DEPLOYS)
        self.compare('deploys in flight', deploys, int(sum(
            v for l, v in metrics.get('ironic_concurrent_actions', []) if l['action'] == 'deploy')), now)
        self.compare('deploy refused', deploys >= limit, any(
            v <= 0 for l, v in metrics.get('ironic_concurrent_action_headroom', []) if l['action'] == 'deploy'), now)
        time.sleep(max(0, 1 - (time.time() - t0)))

    def worked_by_dead(self, n):
        return n['uuid'] in self.orphaned

    orphaned = set()

    def finish(self):
        self.results.append((self.scenario, dict(self.worst), list(self.failures)))


def db_now(eng):
    if eng.dialect.name == 'sqlite':
        # Ironic writes timeutils.utcnow() (naive UTC) from this machine's clock
        return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with eng.connect() as c:
        if eng.dialect.name == 'postgresql':
            return c.execute(sa.text("SELECT (now() AT TIME ZONE 'UTC')::timestamp")).scalar()
        return c.execute(sa.text('SELECT UTC_TIMESTAMP()')).scalar()


def nodes_in(f, states):
    return [n for n in f.db_nodes() if n['provision_state'] in states]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--sidecar', required=True)
    p.add_argument('--db-url', required=True, help="SQLAlchemy URL of a server's database, or sqlite "
                   '(a file in --workdir: --conductors 1, scenarios single or cleanup)')
    p.add_argument('--conductors', type=int, default=3, choices=(1, 2, 3),
                   help='conductors started with the fleet')
    p.add_argument('--workdir', required=True)
    p.add_argument('--net', default='127.42.0')
    p.add_argument('--api-port', type=int, default=16342)
    p.add_argument('--rpc-port', type=int, default=8089)
    p.add_argument('--sidecar-port', type=int, default=16343)
    p.add_argument('--nodes', type=int, default=12)
    p.add_argument('--chroot', help="the release's chroot (default: the host's Ironic)")
    p.add_argument('--release', default='21.4', help='a label for the table')
    p.add_argument('--trace', help="append JSON lines of the sidecar's distinct views and the harness's signals (class Trace)")
    p.add_argument('--scenarios', default='sigterm,sigkill,sigusr1',
                   help='sigterm,sigkill,sigusr1 (21.4), single (one conductor: --conductors 1), hostport (23.0+ with --rpc-port != 8089) '
                        'storm (21.1+: max_concurrent_deploy %d), emptygroup, powerfail, drain (23.1+), cleanup (32.0+)' % STORM_LIMIT)
    a = p.parse_args()
    f = Fleet(a)
    results = []
    try:
        run(f, a, results)
    finally:
        f.stop_all()
    failed = False
    print('\n%-40s %-18s %s' % ('scenario', 'comparison', 'longest difference (lag)'))
    for scenario, worst, failures in results:
        for name, w in worst.items():
            print('%-40s %-18s %5s (%ds)' % (scenario, name, 'n/a' if w is None else '%.0fs' % w, LAGS[name]))
        for msg in failures:
            failed = True
            print('FAIL', msg)
    print('live fleet: %s' % ('FAIL' if failed else 'ok'))
    return 1 if failed else 0


def run(f, a, results):
    f.write_conf()
    f.schema()
    # main(), not `-m`: 29.0's api.py reads [database]connection at import
    # under __main__, before the configuration is parsed
    f.start('api', f.py + ['-c', 'import sys; sys.argv = ["ironic-api", "--config-file", sys.argv[1]]; '
                           'from %s import api; sys.exit(api.main())' % f.cmd, f.conf])
    for h in f.hosts:
        f.start_conductor(h)
    f.start('sidecar', [a.sidecar, '--web.listen-address', '127.0.0.1:%d' % a.sidecar_port,
                        '--ironic.config-file', f.real(f.conf), '--refresh.min-interval', '%ds' % REFRESH,
                        '--log.level', 'warn'] + (['--db.dsn', f.host_db_url] if f.sqlite else []))

    def api_up():
        try:
            return len(json.loads(get(f.api + '/v1/conductors'))['conductors']) == len(f.hosts)
        except Exception:
            return False
    f.wait_until('the API and three conductors', api_up, 120)
    # the sidecar answering must be this fleet's: one left over from an
    # earlier run on the same port would answer for another database
    if not f.running('sidecar'):
        with open(f.real(os.path.join(f.work, 'sidecar.log'))) as lf:
            raise RuntimeError('the sidecar exited (its port %d taken?): %s' % (a.sidecar_port, lf.read()[-600:]))
    log('fleet up:', ', '.join(f.hosts), 'on', f.db_url)
    uuids = []
    lone = 'emptygroup' in a.scenarios.split(',')
    for i in range(a.nodes):
        group = ['--conductor-group', LONE_GROUP] if lone and i >= a.nodes - LONE_NODES else []
        out = f.baremetal('node', 'create', '--driver', 'fake-hardware', '--name', 'live-%d' % i,
                          *group, '-f', 'value', '-c', 'uuid')
        uuids.append(out.strip())
    for u in uuids:
        f.provision(u, 'manage')
    f.wait_until('manageable', lambda: len(nodes_in(f, ('manageable',))) == a.nodes, 120)
    for u in uuids:
        f.provision(u, 'provide')
    f.wait_until('available', lambda: len(nodes_in(f, ('available',))) == a.nodes, 120)
    log('%d nodes available' % a.nodes)

    todo = a.scenarios.split(',')
    if 'single' in todo:
        return single(f, a, results, uuids)
    if f.sqlite and 'cleanup' in todo:
        return sqlite_cleanup(f, a, results, uuids)
    if 'hostport' in todo:
        return hostport(f, a, results, uuids)
    if 'storm' in todo:
        storm(f, a, results, uuids)
    if 'emptygroup' in todo:
        emptygroup(f, a, results, uuids[-LONE_NODES:])
    if 'powerfail' in todo:
        powerfail(f, a, results)
    if 'storm' in todo or 'emptygroup' in todo or 'powerfail' in todo:
        return
    if 'drain' in todo:
        drain(f, a, results, uuids)
    if 'cleanup' in todo:
        cleanup(f, a, results)
    if 'drain' in todo or 'cleanup' in todo:
        return

    # 1. deploys everywhere, then tear-downs; SIGTERM one conductor while its
    # workers hold tear-down locks, graceful_shutdown_timeout reached.
    ck = Checker(f, 'SIGTERM during tear-downs (%s)' % a.release, results)
    # the conductor holding the most (the rings may give one none: seen
    # with 9 nodes on 39.0)
    sigterm_during_teardowns(f, a, ck, uuids, lambda held: max(f.hosts, key=held.count), 15)

    # 2. SIGKILL a conductor holding deploy locks: peers release them
    # (_check_orphan_nodes) after heartbeat_timeout and fail the deploys.
    ck = Checker(f, 'SIGKILL holding deploy locks (%s)' % a.release, results)
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    for n in f.db_nodes():
        if n['provision_state'] == 'error':
            f.provision(n['uuid'], 'deleted')
    f.wait_until('available again', lambda: len(nodes_in(f, ('available',))) == a.nodes, 180, ck)
    for u in uuids:
        f.provision(u, 'active')
    victim = busiest_holder(f, ck)
    held = sum(1 for n in f.db_nodes() if n['reservation'] == victim)
    log('SIGKILL %s holding %d deploy lock(s)' % (victim, held))
    f.signal(victim, signal.SIGKILL)
    f.wait_exit(victim, 10)
    f.wait_until('peers to release its locks', lambda: not [n for n in f.db_nodes() if n['reservation'] == victim],
                 HEARTBEAT_TIMEOUT + 60, ck)
    for _ in range(8):
        ck.poll()
    ck.finish()

    # 3. SIGUSR1 then SIGTERM: exits without unregistering (online stays 1).
    ck = Checker(f, 'SIGUSR1 stop (%s)' % a.release, results)
    victim = f.hosts[2]
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    f.signal(victim, signal.SIGUSR1)
    time.sleep(1)
    if f.running(victim):
        f.signal(victim, signal.SIGTERM)
    f.wait_exit(victim, GRACEFUL + 30)
    end = time.time() + HEARTBEAT_TIMEOUT + 8
    while time.time() < end:
        ck.poll()
    online = {c['hostname']: c['online'] for c in f.db_conductors()}
    log('after SIGUSR1+SIGTERM %s online=%s' % (victim, online.get(victim)))
    ck.finish()

    # 4. a takeover: every node deployed, the conductor that prepared the
    # most boot files killed; once it is dead its peers' _sync_local_state
    # take over periodic_max_workers nodes each per sync_local_state_interval
    ck = Checker(f, 'takeover after SIGKILL (%s)' % a.release, results)
    for h in f.hosts:
        if not f.running(h):
            f.start_conductor(h)

    def alive():
        return sum(1 for c in json.loads(get(f.api + '/v1/conductors?fields=hostname,alive'))['conductors'] if c['alive'])
    f.wait_until('three conductors alive', lambda: alive() == 3, 120, ck)
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    for n in f.db_nodes():
        if n['provision_state'] != 'available':
            target = 'deleted' if n['provision_state'] in ('active', 'error', 'deploy failed') else 'provide'
            for attempt in range(20):
                try:
                    f.provision(n['uuid'], target)
                    break
                except urllib.error.HTTPError as e:
                    # 409: locked a moment by a conductor's periodic task
                    # (a restarted one takes its nodes over)
                    if e.code != 409 or attempt == 19:
                        raise
                    ck.poll()
    f.wait_until('available again', lambda: len(nodes_in(f, ('available',))) == a.nodes, 180, ck)
    for u in uuids:
        f.provision(u, 'active')
    f.wait_until('active', lambda: len(nodes_in(f, ('active',))) == a.nodes, 180, ck)
    ids = {c['id']: c['hostname'] for c in f.db_conductors()}
    prepared = {}
    for n in f.db_nodes():
        h = ids.get(n['conductor_affinity'])
        prepared[h] = prepared.get(h, 0) + 1
    victim = max((h for h in prepared if h in f.hosts), key=prepared.get)
    log('SIGKILL %s, which prepared the boot files of %d active node(s) (periodic_max_workers %d)'
        % (victim, prepared[victim], MAX_WORKERS))
    f.signal(victim, signal.SIGKILL)
    f.wait_exit(victim, 10)
    vid = next(i for i, h in ids.items() if h == victim)
    left = []
    end = time.time() + HEARTBEAT_TIMEOUT + RING_RESET + SYNC_INTERVAL * (prepared[victim] // MAX_WORKERS + 3)
    while time.time() < end:
        ck.poll()
        n = sum(1 for x in f.db_nodes() if x['conductor_affinity'] == vid)
        if not left or left[-1] != n:
            left.append(n)
        if n == 0:
            break
    log('boot files still on %s, as they changed: %s' % (victim, left))
    if left[-1]:
        ck.failures.append('%d node(s) not taken over from %s' % (left[-1], victim))
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d taken over: %s]' % (prepared[victim], '>'.join(map(str, left))),) + ck.results[-1][1:]


def sigterm_during_teardowns(f, a, ck, uuids, pick, margin):
    """Deploys every node, then tears them all down and sends SIGTERM to
    the conductor pick(reservations) returns while its workers hold
    tear-down locks, graceful_shutdown_timeout reached. Polls ck for
    heartbeat_timeout and the no-lock bound plus margin seconds, starts it
    again and restarts whatever conductor still holds a left node
    (recover_left), then finishes ck with the count of nodes the stop left
    in `deleting`."""
    for u in uuids:
        f.provision(u, 'active')
    f.wait_until('active', lambda: len(nodes_in(f, ('active',))) == a.nodes, 180, ck)
    for u in uuids:
        f.provision(u, 'deleted')
    f.wait_until('tear-downs locked', lambda: sum(1 for n in nodes_in(f, ('deleting',)) if n['reservation']) == a.nodes, 60, ck)
    victim = pick([n['reservation'] for n in f.db_nodes() if n['reservation'] in f.hosts])
    Checker.orphaned = {n['uuid'] for n in f.db_nodes() if n['reservation'] == victim}
    log('SIGTERM %s holding %d tear-down lock(s)' % (victim, len(Checker.orphaned)))
    f.signal(victim, signal.SIGTERM)
    if not f.wait_exit(victim, GRACEFUL + 30):
        raise RuntimeError(victim + ' did not exit after graceful_shutdown_timeout')
    end = time.time() + HEARTBEAT_TIMEOUT + NO_LOCK_BOUND + margin
    while time.time() < end:
        ck.poll()
    left = [n for n in f.db_nodes() if n['uuid'] in Checker.orphaned and n['provision_state'] == 'deleting']
    log('%d node(s) left in deleting with no lock after the stop' % len(left))
    f.start_conductor(victim)
    recover_left(f, ck)
    Checker.orphaned = set()
    for _ in range(LAGS['stuck no lock'] + 2):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d left]' % len(left),) + ck.results[-1][1:]


def recover_left(f, ck):
    """Waits until no orphaned node is left in `deleting`. Only a conductor
    that starts fails a node left in a transient state, and only the nodes
    its own ring maps to it (BaseConductorManager._fail_transient_state over
    iter_nodes): a left node that maps to a peer stays until that peer
    starts. So each round waits for the conductors started last, then
    restarts (SIGTERM, start) every conductor Ironic's API says a left node
    maps to."""
    def left():
        return [n['uuid'] for n in f.db_nodes()
                if n['uuid'] in Checker.orphaned and n['provision_state'] == 'deleting']
    for _ in range(3):
        try:
            f.wait_until('the started conductors to fail the left nodes', lambda: not left(), 45, ck)
            return
        except RuntimeError:
            pass
        owners = set()
        for u in left():
            owners.add(json.loads(get(f.api + '/v1/nodes/%s?fields=conductor' % u))['conductor'])
        log('still deleting, mapped to %s: restarting them' % ', '.join(sorted(str(o) for o in owners)))
        for h in sorted(o for o in owners if o in f.hosts):
            f.signal(h, signal.SIGTERM)
            if not f.wait_exit(h, GRACEFUL + 30):
                raise RuntimeError(h + ' did not exit after graceful_shutdown_timeout')
            f.start_conductor(h)
    raise RuntimeError('timed out waiting for the left nodes to be failed')


def storm(f, a, results, uuids):
    """A deploy storm into [conductor]max_concurrent_deploy (21.1+): every
    node asked to deploy, one a second, while each deploy holds
    `deploying` for deploy_delay. Ironic accepts the first STORM_LIMIT and
    refuses the rest (ConcurrentActionLimit) until some finish; each
    poll compares the deploys it counts and whether it refuses with the
    sidecar's ironic_concurrent_actions and headroom."""
    ck = Checker(f, 'deploy storm, max_concurrent_deploy %d (%s)' % (STORM_LIMIT, a.release), results)
    refused = []
    for u in uuids:
        try:
            f.provision(u, 'active')
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors='replace')
            # ConcurrentActionLimit is a 503, but over json-rpc 21.4's API
            # answers 500 with the exception's text
            if e.code not in (500, 503) or 'concurrent action limit' not in body.lower():
                raise RuntimeError('deploy of %s: %d %s' % (u, e.code, body[:300]))
            refused.append(u)
        ck.poll()
    log('deploy storm: %d accepted, %d refused by Ironic (ConcurrentActionLimit)'
        % (len(uuids) - len(refused), len(refused)))
    if not refused:
        ck.failures.append('the storm never reached max_concurrent_deploy: nothing to compare')
    f.wait_until('the accepted deploys to end', lambda: not nodes_in(f, DEPLOYS), DEPLOY_DELAY * 4, ck)
    for _ in range(3):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d refused]' % len(refused),) + ck.results[-1][1:]


def drain(f, a, results, uuids):
    """SIGUSR2 (23.1+): a drain with deploys in flight. The conductor
    unregisters (online false), goes on heartbeating and working until its
    deploys end, then exits. Each poll compares its state as the database
    tells it (draining, then stopped) and its locks; the page must not call
    the locks of a conductor that still works stuck."""
    ck = Checker(f, 'SIGUSR2 drain with deploys in flight (%s)' % a.release, results)
    for u in uuids:
        f.provision(u, 'active')

    victim = busiest_holder(f, ck)
    mine = [n['uuid'] for n in f.db_nodes() if n['reservation'] == victim]
    log('SIGUSR2 %s holding %d deploy lock(s)' % (victim, len(mine)))
    f.signal(victim, signal.SIGUSR2)
    try:
        f.wait_until(victim + ' to drain and exit', lambda: not f.running(victim), DEPLOY_DELAY * 4 + 30, ck)
        exited = 'exited'
    except RuntimeError:
        # Ironic's drain itself may fail and leave the conductor running
        # (29.0: rpc_service._handle_drain runs stop() inside the signal
        # handler, in eventlet's hub, where del_host's database calls raise
        # "do not call blocking functions from the mainloop"); the
        # comparisons go on all the same
        exited = 'did not exit'
    states = {n['uuid']: n['provision_state'] for n in f.db_nodes()}
    online = {c['hostname']: c['online'] for c in f.db_conductors()}
    log('%s %s (online=%s); its nodes: %s' % (victim, exited, online.get(victim),
                                              ', '.join(sorted(states[u] for u in mine))))
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    for _ in range(HEARTBEAT_TIMEOUT + 3):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d locks, %s]' % (len(mine), exited),) + ck.results[-1][1:]


def powerfail(f, a, results):
    """A power failure: fake-hardware's power interface answers a node's
    power state from the node's own row (FakePower.get_power_state), so a
    BMC that fails is a power_state of `error` written there (the harness
    plays the BMC). The conductor's _sync_power_states then cannot read it
    (do_sync_power_state raises PowerStateFailure on ERROR) and, past
    power_state_sync_max_retries, handle_sync_power_state_max_retries_exceeded
    puts the node in maintenance with fault `power failure` and records an
    ERROR event in node_history under its [DEFAULT]host. Each poll compares
    the faulted nodes by conductor (Ironic's API) and the ERROR events by
    conductor (node_history) with ironic_nodes_faulted and
    ironic_conductor_history_errors; the page must not say all clear."""
    ck = Checker(f, 'power failure (%s)' % a.release, results)
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    # /v1/nodes/detail: 21.4 answers 500 to a list with fields=conductor
    served = {n['uuid'] for n in json.loads(get(f.api + '/v1/nodes/detail'))['nodes'] if n.get('conductor')}
    victims = [n['uuid'] for n in f.db_nodes() if n['uuid'] in served and not n['reservation']][:POWERFAIL_NODES]
    if not victims:
        raise RuntimeError('no node served by a running conductor to fail')
    log('the BMC of %d node(s) fails: power_state error' % len(victims))
    with f.eng.begin() as c:
        for u in victims:
            c.execute(sa.text("UPDATE nodes SET power_state = 'error' WHERE uuid = :u"), {'u': u})

    def faulted():
        with f.eng.connect() as c:
            return [r[0] for r in c.execute(sa.text(
                "SELECT uuid FROM nodes WHERE fault = 'power failure'"))]
    f.wait_until('Ironic to fault them', lambda: set(victims) <= set(faulted()),
                 POWER_SYNC_INTERVAL * (POWER_SYNC_RETRIES + 2) + 60, ck)
    for _ in range(LAGS['faulted'] + 3):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d faulted]' % len(victims),) + ck.results[-1][1:]


def emptygroup(f, a, results, lone):
    """A conductor group emptied: the group's only conductor stops
    (SIGTERM, unregistering). Ironic then has no conductor for the group's
    nodes (its API's conductor is null, NoValidHost for any action on
    them); each poll compares node -> conductor, the states and the page."""
    ck = Checker(f, 'conductor group emptied (%s)' % a.release, results)
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    victim = f.hosts[-1]
    log('SIGTERM %s, the only conductor of group %r (%d nodes)' % (victim, LONE_GROUP, len(lone)))
    f.signal(victim, signal.SIGTERM)
    if not f.wait_exit(victim, GRACEFUL + 30):
        raise RuntimeError(victim + ' did not exit after graceful_shutdown_timeout')
    for _ in range(HEARTBEAT_TIMEOUT + RING_RESET + 5):
        ck.poll()
    served = [u for u in lone if json.loads(get(f.api + '/v1/nodes/%s?fields=conductor' % u)).get('conductor')]
    if served:
        ck.failures.append('Ironic still names a conductor for %d node(s) of the emptied group' % len(served))
    ck.finish()


def cleanup(f, a, results):
    """The stale conductor cleanup (32.0+, cleanup_stale_conductors): one
    conductor killed; its peers run the cleanup every CLEANUP_INTERVAL, and
    it should delete the row once the heartbeat is older than
    CLEANUP_TIMEOUT. The truth is whether the row goes. When it goes, the
    sidecar's ironic_conductor_row_deletion_timestamp_seconds must have said
    when (the row going at or after it, within the interval and a poll);
    when it stays (39.0 on PostgreSQL: the task fails at every run), the
    sidecar must have no such series and its page must say that Ironic never
    deletes it."""
    ck = Checker(f, 'stale row cleanup, timeout %ds (%s)' % (CLEANUP_TIMEOUT, a.release), results)
    victim = next(h for h in f.hosts if f.running(h))
    f.signal(victim, signal.SIGKILL)
    f.wait_exit(victim, 10)
    said = set()
    end = time.time() + CLEANUP_TIMEOUT + HEARTBEAT_TIMEOUT + 3 * CLEANUP_INTERVAL
    deleted = None
    while time.time() < end:
        ck.poll()
        m = parse_metrics(get(f.sidecar + '/metrics', 'text/plain'))
        said |= {v for l, v in m.get('ironic_conductor_row_deletion_timestamp_seconds', []) if l['hostname'] == victim}
        if victim not in {c['hostname'] for c in f.db_conductors()}:
            deleted = time.time()
            break
    if deleted is None:
        page = get(f.sidecar + '/', 'text/html')
        log('%s: its row is still there %ds after its last heartbeat' % (
            victim, CLEANUP_TIMEOUT + HEARTBEAT_TIMEOUT + 3 * CLEANUP_INTERVAL))
        if said:
            ck.failures.append('%s: the row stays, the sidecar said Ironic deletes it from %s' % (victim, sorted(said)))
        if 'never deletes this row' not in page:
            ck.failures.append('%s: the row stays, the page does not say so' % victim)
    elif len(said) != 1:
        ck.failures.append('%s: Ironic deleted the row; the sidecar said %s, want one time' % (victim, sorted(said)))
    else:
        late = deleted - said.pop()
        log('%s deleted %.1fs after the time the sidecar said (interval %ds)' % (victim, late, CLEANUP_INTERVAL))
        if not -1 <= late <= CLEANUP_INTERVAL + LAGS['conductor state']:
            ck.failures.append('%s deleted %.1fs after the sidecar\'s time, want 0-%ds' % (
                victim, late, CLEANUP_INTERVAL + LAGS['conductor state']))
    for _ in range(3):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + (' [deleted]' if deleted else ' [kept]'),) + ck.results[-1][1:]


def busiest_holder(f, ck):
    """Waits for deploy locks and names the conductor holding the most: the
    node UUIDs are new at each run, so the rings may give any one conductor
    none (with 6 nodes over three, (2/3)^6 of the runs)."""
    def holders():
        locks = {}
        for n in f.db_nodes():
            if n['reservation']:
                locks[n['reservation']] = locks.get(n['reservation'], 0) + 1
        return locks
    f.wait_until('deploy locks', holders, 60, ck)
    locks = holders()
    return max(locks, key=locks.get)


def hostport(f, a, results, uuids):
    """23.0+ with [json_rpc]port != 8089: conductors register as HOST:PORT
    and lock as HOST. Their live locks are theirs; after a SIGKILL nothing in
    Ironic releases them."""
    ck = Checker(f, 'HOST:PORT locks, SIGKILL (%s)' % a.release, results)
    for u in uuids:
        f.provision(u, 'active')
    victim = busiest_holder(f, ck)
    for _ in range(3):
        ck.poll()
    names = [c['hostname'] for c in f.db_conductors()]
    held = sum(1 for n in f.db_nodes() if n['reservation'] == victim)
    log('conductors %s; SIGKILL %s holding %d deploy lock(s) named %s' % (names, victim, held, victim))
    f.signal(victim, signal.SIGKILL)
    f.wait_exit(victim, 10)
    end = time.time() + HEARTBEAT_TIMEOUT + 25
    while time.time() < end:
        ck.poll()
    left = sum(1 for n in f.db_nodes() if n['reservation'] == victim)
    log('%d lock(s) named %s left after %ds' % (left, victim, HEARTBEAT_TIMEOUT + 25))
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d never released]' % left,) + ck.results[-1][1:]


def reset_nodes(f, ck):
    """Brings every node back to `available` (a failed tear-down is `error`,
    a failed deploy `deploy failed`: both deleted)."""
    f.wait_until('settled', lambda: not nodes_in(f, IN_PROGRESS), 120, ck)
    for n in f.db_nodes():
        if n['provision_state'] in ('error', 'deploy failed', 'active'):
            f.provision(n['uuid'], 'deleted')
    f.wait_until('available again', lambda: len(nodes_in(f, ('available',))) == f.a.nodes, 180, ck)


def restart(f, ck, h):
    """Starts conductor h again and waits until Ironic's API counts it alive."""
    f.start_conductor(h)

    def up():
        return any(c['hostname'] == h and c['alive'] for c in
                   json.loads(get(f.api + '/v1/conductors?fields=hostname,alive'))['conductors'])
    f.wait_until(h + ' alive again', up, 120, ck)


def single(f, a, results, uuids):
    """One conductor at a time (--conductors 1: Ironic's SQLite case, where
    a single conductor serves every node). No peer takes anything over:
    what a stop leaves stays until the conductor starts again, whose
    start (BaseConductorManager.prepare_host, init_host) clears its own
    locks and fails its nodes left in a transient state."""
    h = f.hosts[0]
    # 1. SIGTERM while it holds tear-down locks, graceful_shutdown_timeout
    # reached: 21.4 clears its locks at once, its tear-downs are left in
    # `deleting` until it starts again.
    ck = Checker(f, 'one conductor: SIGTERM during tear-downs, restart (%s)' % a.release, results)
    sigterm_during_teardowns(f, a, ck, uuids, lambda held: h, 10)

    # 2. SIGKILL holding deploy locks: with no peer the locks stay (a dead
    # holder) until it starts again, clears them and fails the deploys.
    ck = Checker(f, 'one conductor: SIGKILL holding deploy locks, restart (%s)' % a.release, results)
    reset_nodes(f, ck)
    for u in uuids:
        f.provision(u, 'active')
    f.wait_until('deploy locks', lambda: sum(1 for n in f.db_nodes() if n['reservation'] == h) > 0, 60, ck)
    log('SIGKILL %s holding %d deploy lock(s)' % (h, sum(1 for n in f.db_nodes() if n['reservation'] == h)))
    f.signal(h, signal.SIGKILL)
    f.wait_exit(h, 10)
    end = time.time() + HEARTBEAT_TIMEOUT + 8
    while time.time() < end:
        ck.poll()
    held = sum(1 for n in f.db_nodes() if n['reservation'] == h)
    log('%d lock(s) still held by %s after %ds; starting it again' % (held, h, HEARTBEAT_TIMEOUT + 8))
    restart(f, ck, h)
    f.wait_until('its locks cleared, its deploys failed', lambda: not nodes_in(f, IN_PROGRESS), 60, ck)
    states = sorted(n['provision_state'] for n in f.db_nodes())
    log('after the restart: %s' % ', '.join('%s x%d' % (x, states.count(x)) for x in sorted(set(states))))
    for _ in range(5):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [%d held]' % held,) + ck.results[-1][1:]

    # 3. SIGUSR1 then SIGTERM: exits without unregistering (online stays
    # true, the heartbeat goes stale), then starts again.
    ck = Checker(f, 'one conductor: SIGUSR1 stop, restart (%s)' % a.release, results)
    reset_nodes(f, ck)
    f.signal(h, signal.SIGUSR1)
    time.sleep(1)
    if f.running(h):
        f.signal(h, signal.SIGTERM)
    f.wait_exit(h, GRACEFUL + 30)
    end = time.time() + HEARTBEAT_TIMEOUT + 6
    while time.time() < end:
        ck.poll()
    online = {c['hostname']: c['online'] for c in f.db_conductors()}
    log('after SIGUSR1+SIGTERM %s online=%s' % (h, online.get(h)))
    restart(f, ck, h)
    for _ in range(5):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + ' [online=%s]' % online.get(h),) + ck.results[-1][1:]


def sqlite_cleanup(f, a, results, uuids):
    """The stale conductor cleanup on SQLite (32.0+, --conductors 1): there
    ConductorManager._cleanup_stale_conductors deletes every row
    get_offline_conductors returns, which on SQLite is every row with
    online false, whatever its age (6135a00c3). First conductor A, with the
    boot files of active nodes, is killed (SIGKILL: online stays true, and
    nothing heartbeats on SQLite) and conductor B started on the same file:
    B's cleanup must leave A's row, and the sidecar must have no deletion
    series for it. Then A is started again and stopped with SIGTERM
    (unregisters: online false): B's next run deletes the row, at the time
    the sidecar's ironic_conductor_row_deletion_timestamp_seconds said
    (within the interval and a poll)."""
    A, B = f.names[0], f.names[1]
    ck = Checker(f, 'SQLite stale row cleanup, interval %ds (%s)' % (CLEANUP_INTERVAL, a.release), results)
    for u in uuids:
        f.provision(u, 'active')
    f.wait_until('active', lambda: len(nodes_in(f, ('active',))) == a.nodes, 180, ck)

    def said():
        m = parse_metrics(get(f.sidecar + '/metrics', 'text/plain'))
        return {v for l, v in m.get('ironic_conductor_row_deletion_timestamp_seconds', []) if l['hostname'] == A}

    def row():
        return next((c for c in f.db_conductors() if c['hostname'] == A), None)
    log('SIGKILL %s, then %s started on the same SQLite file' % (A, B))
    f.signal(A, signal.SIGKILL)
    f.wait_exit(A, 10)
    f.start_conductor(B)
    f.wait_until(B + ' registered', lambda: any(c['hostname'] == B and c['online'] for c in f.db_conductors()), 120, ck)
    early = set()
    end = time.time() + 2 * CLEANUP_INTERVAL + 5
    while time.time() < end:
        ck.poll()
        early |= said()
    r = row()
    log('%s killed: row %s (online=%s) after two of %s\'s cleanup runs; sidecar said %s'
        % (A, 'kept' if r else 'DELETED', r and r['online'], B, sorted(early)))
    if not r:
        ck.failures.append('%s: killed (online true), its row was deleted' % A)
    if early:
        ck.failures.append('%s: killed (online true), the sidecar said Ironic deletes it from %s' % (A, sorted(early)))

    before = r['updated_at'] if r else None
    f.start_conductor(A)
    f.wait_until(A + ' registered again', lambda: row() is not None and row()['updated_at'] != before, 120, ck)
    for _ in range(5):
        ck.poll()
    f.signal(A, signal.SIGTERM)
    if not f.wait_exit(A, GRACEFUL + 30):
        raise RuntimeError(A + ' did not exit after graceful_shutdown_timeout')
    told = set()
    deleted = None
    end = time.time() + 3 * CLEANUP_INTERVAL + 10
    while time.time() < end:
        ck.poll()
        told |= said()
        if row() is None:
            deleted = time.time()
            break
    if deleted is None:
        ck.failures.append('%s: stopped (online false), its row still there %ds later; the sidecar said %s'
                           % (A, 3 * CLEANUP_INTERVAL + 10, sorted(told)))
    elif len(told) != 1:
        ck.failures.append('%s: Ironic deleted the row; the sidecar said %s, want one time' % (A, sorted(told)))
    else:
        late = deleted - told.pop()
        log('%s deleted %.1fs after the time the sidecar said (interval %ds)' % (A, late, CLEANUP_INTERVAL))
        if not -1 <= late <= CLEANUP_INTERVAL + LAGS['conductor state']:
            ck.failures.append('%s deleted %.1fs after the sidecar\'s time, want 0-%ds' % (
                A, late, CLEANUP_INTERVAL + LAGS['conductor state']))
        ck.late = late
    aff = sum(1 for n in f.db_nodes() if n['conductor_affinity'] is None)
    log('%d of %d nodes with conductor_affinity NULL after the delete' % (aff, a.nodes))
    for _ in range(3):
        ck.poll()
    ck.finish()
    ck.results[-1] = (ck.scenario + (' [killed: kept; stopped: deleted %+.0fs]' % ck.late if deleted and hasattr(ck, 'late')
                                     else ' [deleted]' if deleted else ' [kept]'),) + ck.results[-1][1:]


if __name__ == '__main__':
    sys.exit(main())
