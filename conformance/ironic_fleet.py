#!/usr/bin/python3
"""Conformance harness: real Ironic 21.4 vs ironic-conductor-exporter's JSON API.

Run with /usr/bin/python3 (the Debian interpreter that has python3-ironic).

Subcommands:
  setup    fresh database + Ironic's own migrations + a random fleet written
           only through Ironic's DB API (ironic.db.api.get_instance()).
  serve    run Ironic's real API service (ironic.cmd.api) on 127.0.0.1:PORT,
           noauth, json-rpc transport (no conductor needed for GETs).
  compare  check the sidecar's JSON API against Ironic's answers (the
           sidecar's contract, README.md "compare").
  cli      run the stock `baremetal` CLI against an endpoint and check output.

See README.md next to this file.
"""

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------
# Fleet vocabulary
# --------------------------------------------------------------------------

HARDWARE_TYPES = ['ipmi', 'redfish', 'idrac', 'fake-hardware', 'ilo',
                  'irmc', 'manual-management', 'idrac-redfish']
# Drivers that no conductor ever registers (nodes with them have no conductor).
UNSERVED_DRIVERS = ['xclarity', 'snmp', 'ibmc']
# Conductor group vocabulary. "" is always used; at least one mixed-case one.
GROUPS_LOWER = ['rack-a', 'gpu', 'edge_1', 'zone.b']
GROUPS_MIXED = ['Rack-B', 'EU-West', 'DC1.Pod2']
# Groups no conductor belongs to.
UNSERVED_GROUPS = ['orphans', 'decommissioned']
# Interfaces registered per hardware type (duplicates in the join on purpose:
# the ring must deduplicate hardware types).
IFACES = [('power', ['ipmitool', 'redfish', 'fake']),
          ('management', ['ipmitool', 'redfish']),
          ('boot', ['pxe', 'ipxe'])]

# Conductor categories (age is "seconds since last heartbeat" at setup time).
#   alive         online, fresh heartbeat
#   just_inside   online, age = timeout - margin   (alive, in the rings)
#   just_outside  online, age = timeout + margin   (not alive, not in rings)
#   stale         online, age >> timeout           ("dead")
#   offline_fresh online=False, fresh heartbeat    ("draining")
#   offline_stale online=False, old heartbeat      ("stopped")
#   offline_inside/offline_outside: offline near the boundary
CATEGORIES = ['alive', 'just_inside', 'just_outside', 'stale',
              'offline_fresh', 'offline_stale', 'offline_inside',
              'offline_outside']


def _utcnow():
    return datetime.datetime.utcnow()


def _iso(dt):
    return dt.replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------
# Ironic configuration helpers (imports Ironic lazily: compare/cli stay light)
# --------------------------------------------------------------------------

def _write_ironic_conf(path, db_url, heartbeat_timeout, port=None,
                       log_file=None, hash_partition_exponent=5,
                       hash_ring_algorithm='md5', workers=1,
                       hash_ring_reset_interval=0, debug=False):
    lines = [
        '[DEFAULT]',
        'auth_strategy = noauth',
        # The API refuses rpc_transport=none (ironic.common.service.
        # ensure_rpc_transport); json-rpc needs no broker and GETs never call
        # the conductor.
        'rpc_transport = json-rpc',
        'host = ironic-conformance-api',
        'hash_partition_exponent = %d' % hash_partition_exponent,
        'hash_ring_algorithm = %s' % hash_ring_algorithm,
        # Low, so the API never answers from a ring cached long before a
        # heartbeat went stale (0 = rebuild per node: slow lists).
        'hash_ring_reset_interval = %d' % hash_ring_reset_interval,
        'debug = %s' % ('true' if debug else 'false'),
        'use_stderr = false',
    ]
    if log_file:
        lines.append('log_file = %s' % log_file)
    lines += [
        '[api]',
        'host_ip = 127.0.0.1',
        'port = %d' % (port or 6385),
        'api_workers = %d' % workers,
        '[conductor]',
        'heartbeat_timeout = %d' % heartbeat_timeout,
        '[database]',
        'connection = %s' % db_url,
        '[json_rpc]',
        'auth_strategy = noauth',
        '[oslo_policy]',
        'enforce_scope = false',
        'enforce_new_defaults = false',
        '',
    ]
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def _init_ironic_conf(db_url, heartbeat_timeout):
    """Configure oslo.config for in-process use of Ironic's DB layer."""
    import ironic.cmd  # noqa: F401  (eventlet monkey patching, i18n)
    from ironic.common import service as ironic_service
    fd, path = tempfile.mkstemp(prefix='ironic-fleet-', suffix='.conf')
    os.close(fd)
    _write_ironic_conf(path, db_url, heartbeat_timeout)
    try:
        ironic_service.prepare_command(['ironic-fleet', '--config-file', path])
    finally:
        os.unlink(path)
    import logging
    logging.getLogger('alembic').setLevel(logging.WARNING)


def _recreate_database(db_url):
    """Drop and create the database named in db_url (generic over backends)."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    url = make_url(db_url)
    backend = url.get_backend_name()
    if backend == 'sqlite':
        if url.database and url.database != ':memory:':
            if os.path.exists(url.database):
                os.unlink(url.database)
        return
    dbname = url.database
    if not dbname:
        raise SystemExit('db url must name a database: %s' % db_url)
    if backend == 'postgresql':
        admin = url.set(database='postgres')
        quote = '"%s"'
    elif backend in ('mysql', 'mariadb'):
        # (SQLAlchemy 1.4's URL.set(database=None) keeps the database)
        admin = url.set(database='mysql')
        quote = '`%s`'
    else:
        raise SystemExit('unsupported backend %s' % backend)
    eng = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with eng.connect() as conn:
        if backend == 'postgresql':
            conn.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :d AND pid <> pg_backend_pid()'), {'d': dbname})
        conn.execute(sa.text('DROP DATABASE IF EXISTS ' + quote % dbname))
        if backend == 'postgresql':
            conn.execute(sa.text("CREATE DATABASE " + quote % dbname +
                                 " ENCODING 'UTF8' TEMPLATE template0"))
        else:
            conn.execute(sa.text('CREATE DATABASE ' + quote % dbname +
                                 ' CHARACTER SET utf8mb4'))
    eng.dispose()


def _drop_database(db_url):
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    url = make_url(db_url)
    backend = url.get_backend_name()
    if backend == 'sqlite':
        if url.database and os.path.exists(url.database):
            os.unlink(url.database)
        return
    if backend == 'postgresql':
        admin, q = url.set(database='postgres'), '"%s"'
    else:
        admin, q = url.set(database='mysql'), '`%s`'
    eng = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with eng.connect() as conn:
        if backend == 'postgresql':
            conn.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :d AND pid <> pg_backend_pid()'),
                {'d': url.database})
        conn.execute(sa.text('DROP DATABASE IF EXISTS ' + q % url.database))
    eng.dispose()


# --------------------------------------------------------------------------
# setup
# --------------------------------------------------------------------------

def _plan_fleet(seed, timeout, margin):
    rng = random.Random(seed)
    n_cond = rng.randint(3, 12)
    groups = [''] + rng.sample(GROUPS_LOWER, rng.randint(1, 2)) + \
        rng.sample(GROUPS_MIXED, rng.randint(1, 2))
    # Categories: the boundary ones and a live one always; the rest random.
    must = ['alive', 'just_inside', 'just_outside', 'offline_fresh', 'stale',
            'offline_stale']
    cats = must[:n_cond] + [rng.choice(CATEGORIES)
                            for _ in range(n_cond - len(must))]
    rng.shuffle(cats)
    conductors = []
    used = set()
    for i, cat in enumerate(cats):
        while True:
            num = rng.randint(1, 99)
            style = rng.random()
            if style < 0.3:
                host = 'cond-%d.example.com:6385' % num
            elif style < 0.4:
                host = 'Cond-%d.Example.COM' % num
            elif style < 0.5:
                host = 'cond_%d' % num
            else:
                host = 'cond-%d.example.com' % num
            if host.lower() not in used:
                used.add(host.lower())
                break
        if i == 0:
            group = ''
        elif i == 1:
            group = [g for g in groups if g != g.lower()][0]
        else:
            group = rng.choice(groups)
        hw = rng.sample(HARDWARE_TYPES, rng.randint(1, 4))
        if cat in ('alive', 'offline_fresh'):
            age = rng.randint(0, int(timeout / 2))
        elif cat in ('just_inside', 'offline_inside'):
            age = timeout - margin
        elif cat in ('just_outside', 'offline_outside'):
            age = timeout + margin
        else:
            age = rng.randint(timeout * 3, timeout * 1000)
        online = not cat.startswith('offline')
        conductors.append({'hostname': host, 'conductor_group': group,
                           'hardware_types': hw, 'category': cat,
                           'age_seconds': age, 'online': online,
                           # half of the heartbeats are a register followed by
                           # touch_conductor (like a real heartbeat)
                           'touched': rng.random() < 0.5,
                           'drop_interfaces': (not online and
                                               rng.random() < 0.5)})
    # Make sure every group has a live member for at least one hardware type,
    # otherwise the seed tests little; not required, the rng decides the rest.
    n_nodes = rng.randint(50, 400)
    served = sorted({h for c in conductors for h in c['hardware_types']})
    nodes = []
    names = set()
    for i in range(n_nodes):
        u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        r = rng.random()
        if r < 0.55:
            name = 'node-%d' % i
        elif r < 0.65:
            name = 'Node_%d.rack~%d' % (i, rng.randint(1, 9))
        else:
            name = None
        if name:
            names.add(name)
        d = rng.random()
        live = [c for c in conductors if c['online'] and
                c['age_seconds'] <= timeout]
        g = rng.random()
        if d < 0.5 and live:
            # a node some live conductor serves (its group, one of its types)
            c = rng.choice(live)
            driver = rng.choice(c['hardware_types'])
            group = c['conductor_group']
        elif d < 0.88:
            driver = rng.choice(served)
        else:
            driver = rng.choice(UNSERVED_DRIVERS)
        if d < 0.5 and live:
            pass
        elif g < 0.8:
            group = rng.choice(groups)
        elif g < 0.9:
            group = rng.choice(UNSERVED_GROUPS)
        else:
            # a case variant of a served group: ring keys are case-sensitive
            group = rng.choice([x for x in groups if x] or ['x']).swapcase()
        res = None
        rr = rng.random()
        if rr < 0.08:
            res = rng.choice(conductors)['hostname']
        elif rr < 0.12:
            res = rng.choice(['ghost-conductor', 'gone.example.com:6385'])
        nodes.append({'uuid': u, 'name': name, 'driver': driver,
                      'conductor_group': group, 'reservation': res})
    return conductors, nodes


def cmd_setup(a):
    t0 = time.time()
    _init_ironic_conf(a.db_url, a.heartbeat_timeout)
    from oslo_utils import timeutils
    from ironic.db import api as db_api
    from ironic.db import migration
    from ironic import objects

    conductors, nodes = _plan_fleet(a.seed, a.heartbeat_timeout, a.margin)
    _recreate_database(a.db_url)
    # == `ironic-dbsync upgrade`; alembic's env.py would reconfigure logging
    # from alembic.ini (INFO to stderr): keep it quiet.
    import logging.config
    orig_fc = logging.config.fileConfig
    logging.config.fileConfig = lambda *args, **kw: None
    try:
        if a.db_url.startswith('sqlite'):
            # Ironic's alembic migrations ALTER constraints, which SQLite
            # cannot: `ironic-dbsync create_schema` (models + stamp head) is
            # Ironic's own way for SQLite (its unit tests do the same).
            migration.create_schema()
        else:
            migration.upgrade(None)      # == `ironic-dbsync upgrade`
    finally:
        logging.config.fileConfig = orig_fc
    dbapi = db_api.get_instance()

    # Nodes first (their timestamps do not matter), heartbeats last so that
    # the ages are as fresh as possible when setup returns.
    for n in nodes:
        # 'version' is what objects.Node.create() would store; without it
        # the API fails with 500 (objects.base: is_compatible(None, ...)).
        values = {'uuid': n['uuid'], 'driver': n['driver'],
                  'conductor_group': n['conductor_group'],
                  'version': objects.Node.get_target_version()}
        if n['name']:
            values['name'] = n['name']
        dbapi.create_node(values)
    for n in nodes:
        if n['reservation']:
            dbapi.reserve_node(n['reservation'], n['uuid'])

    now = _utcnow().replace(microsecond=0)
    setup_unix = time.time()
    try:
        for c in conductors:
            hb = now - datetime.timedelta(seconds=c['age_seconds'])
            reg = hb - datetime.timedelta(seconds=600) if c['touched'] else hb
            timeutils.set_time_override(reg)
            # Same values objects.Conductor.register() passes, except that
            # it lowercases conductor_group: we keep mixed case on purpose
            # (values must be used exactly as stored).
            ref = dbapi.register_conductor(
                {'hostname': c['hostname'], 'drivers': c['hardware_types'],
                 'conductor_group': c['conductor_group'],
                 'version': objects.Conductor.get_target_version()})
            ifaces = []
            for ht in c['hardware_types']:
                for itype, inames in IFACES:
                    for k, iname in enumerate(inames[:2]):
                        ifaces.append({'hardware_type': ht,
                                       'interface_type': itype,
                                       'interface_name': iname,
                                       'default': k == 0})
            dbapi.register_conductor_hardware_interfaces(ref.id, ifaces)
            timeutils.set_time_override(hb)
            if c['touched']:
                dbapi.touch_conductor(c['hostname'])
            if not c['online']:
                # Like a conductor stopping: online=False, updated_at=now
                # (the onupdate of the row), i.e. the heartbeat time here.
                dbapi.unregister_conductor(c['hostname'])
                if c['drop_interfaces']:
                    # objects.Conductor.unregister() (a clean stop) also
                    # deletes the hardware interface rows; a crash does not.
                    dbapi.unregister_conductor_hardware_interfaces(ref.id)
            c['updated_at'] = _iso(hb)
            c['id'] = ref.id
    finally:
        timeutils.clear_time_override()

    # Read back what Ironic stored (the truth the sidecar will read).
    stored = {r.hostname: r for r in dbapi.get_conductor_list()}
    for c in conductors:
        r = stored[c['hostname']]
        assert bool(r.online) == c['online'], (c, r.online)
        c['updated_at'] = _iso(r.updated_at)
        c['drivers'] = list(r.drivers or [])

    summary = {
        'seed': a.seed,
        'db_url': a.db_url,
        'heartbeat_timeout': a.heartbeat_timeout,
        'margin_seconds': a.margin,
        'setup_time': setup_unix,
        'setup_time_utc': _iso(now),
        # compare must finish before the just_inside conductors cross the
        # timeout: now < setup_time + budget.
        'budget_seconds': a.margin,
        'conductors': conductors,
        'nodes': nodes,
        'setup_duration_seconds': round(time.time() - t0, 2),
    }
    text = json.dumps(summary, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(text + '\n')
        brief = {k: v for k, v in summary.items() if k != 'nodes'}
        brief['nodes'] = len(nodes)
        brief['conductors'] = [
            '%s group=%r online=%s age=%ss %s hw=%s' % (
                c['hostname'], c['conductor_group'], c['online'],
                c['age_seconds'], c['category'], ','.join(c['hardware_types']))
            for c in conductors]
        print(json.dumps(brief, indent=1))
    else:
        print(text)


def _stamp_heartbeats(dbapi, conductors, now):
    """Give each conductor its heartbeat age relative to `now` using only
    Ironic's DB API (time override + touch_conductor / unregister)."""
    from oslo_utils import timeutils
    try:
        for c in conductors:
            hb = now - datetime.timedelta(seconds=c['age_seconds'])
            timeutils.set_time_override(hb)
            dbapi.touch_conductor(c['hostname'])      # online=True, updated_at
            if not c['online']:
                dbapi.unregister_conductor(c['hostname'])  # online=False
    finally:
        timeutils.clear_time_override()


def cmd_heartbeat(a):
    """Re-apply the fleet's heartbeat ages relative to now (run it right
    before compare when servers took a while to start)."""
    with open(a.fleet) as f:
        fleet = json.load(f)
    db_url = a.db_url or fleet['db_url']
    _init_ironic_conf(db_url, fleet['heartbeat_timeout'])
    from ironic.db import api as db_api
    dbapi = db_api.get_instance()
    now = _utcnow().replace(microsecond=0)
    setup_unix = time.time()
    _stamp_heartbeats(dbapi, fleet['conductors'], now)
    stored = {r.hostname: r for r in dbapi.get_conductor_list()}
    for c in fleet['conductors']:
        r = stored[c['hostname']]
        assert bool(r.online) == c['online'], (c['hostname'], r.online)
        c['updated_at'] = _iso(r.updated_at)
    fleet['setup_time'] = setup_unix
    fleet['setup_time_utc'] = _iso(now)
    with open(a.fleet, 'w') as f:
        f.write(json.dumps(fleet, indent=1, sort_keys=True) + '\n')
    print('heartbeats re-stamped at %s for %d conductors' % (
        _iso(now), len(fleet['conductors'])))


def cmd_dropdb(a):
    _drop_database(a.db_url)


# --------------------------------------------------------------------------
# serve
# --------------------------------------------------------------------------

_HEADER_LOG = None


def _install_request_logger(path):
    """Log method, path, query and request headers of every API request.

    This wraps Ironic's real WSGI application object (nothing else changes),
    so that we can see what the stock CLI sends.
    """
    from ironic.api import app as ironic_app
    orig_call = ironic_app.VersionSelectorApplication.__call__

    def __call__(self, environ, start_response):
        hdrs = {k[5:].replace('_', '-').title(): v
                for k, v in environ.items() if k.startswith('HTTP_')}
        # eventlet puts 'text/plain' into CONTENT_TYPE when the request
        # has no Content-Type header.
        if environ.get('CONTENT_TYPE') not in (None, '', 'text/plain'):
            hdrs['Content-Type'] = environ['CONTENT_TYPE']
        rec = {'t': time.time(), 'method': environ.get('REQUEST_METHOD'),
               'path': environ.get('PATH_INFO'),
               'query': environ.get('QUERY_STRING', ''), 'headers': hdrs}
        status_box = {}

        def sr(status, headers, exc_info=None):
            status_box['status'] = status
            status_box['headers'] = headers
            return start_response(status, headers, exc_info) \
                if exc_info else start_response(status, headers)
        result = orig_call(self, environ, sr)
        rec['status'] = status_box.get('status')
        rec['response_headers'] = status_box.get('headers')
        with open(path, 'a') as f:
            f.write(json.dumps(rec) + '\n')
        return result
    ironic_app.VersionSelectorApplication.__call__ = __call__


def cmd_serve(a):
    logdir = a.log_dir or os.path.join(tempfile.gettempdir(),
                                       'ironic-conformance')
    os.makedirs(logdir, exist_ok=True)
    log_file = os.path.join(logdir, 'ironic-api-%d.log' % a.port)
    conf = os.path.join(logdir, 'ironic-api-%d.conf' % a.port)
    _write_ironic_conf(conf, a.db_url, a.heartbeat_timeout, port=a.port,
                       log_file=log_file,
                       hash_partition_exponent=a.hash_partition_exponent,
                       hash_ring_algorithm=a.hash_ring_algorithm,
                       workers=a.workers, debug=a.debug,
                       hash_ring_reset_interval=a.hash_ring_reset_interval)
    print('ironic-api: config %s, log %s, requests %s' % (
        conf, log_file, os.path.join(logdir, 'requests-%d.jsonl' % a.port)),
        flush=True)
    # ironic.cmd sets up eventlet monkey patching exactly as the real
    # ironic-api console script does.
    import ironic.cmd  # noqa: F401
    if not a.no_request_log:
        _install_request_logger(os.path.join(logdir,
                                             'requests-%d.jsonl' % a.port))
    from ironic.cmd import api
    sys.argv = ['ironic-api', '--config-file', conf]
    return api.main()


# --------------------------------------------------------------------------
# HTTP helpers (compare/cli)
# --------------------------------------------------------------------------

LATEST = {'X-OpenStack-Ironic-API-Version': 'latest',
          'Accept': 'application/json'}
# No version header at all (Ironic: 1.1, the sidecar: its maximum).
NO_VERSION = {'Accept': 'application/json'}


def http_get(base, path, headers=None, timeout=30):
    """GET base+path -> (status, headers, parsed body). headers None means
    LATEST; pass NO_VERSION to send no version header."""
    url = base.rstrip('/') + path
    req = urllib.request.Request(
        url, headers=dict(LATEST if headers is None else headers))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            status, hdrs = r.status, _Headers(r.headers.items())
    except urllib.error.HTTPError as e:
        body, status, hdrs = e.read(), e.code, _Headers(e.headers.items())
    try:
        data = json.loads(body.decode('utf-8')) if body else None
    except ValueError:
        data = body.decode('utf-8', 'replace')
    return status, hdrs, data


class _Headers(dict):
    """Case-insensitive header dict (eventlet title-cases header names:
    X-Openstack-Ironic-Api-Version)."""

    def __init__(self, items):
        super().__init__((k.lower(), v) for k, v in items)

    def get(self, k, default=None):
        return super().get(k.lower(), default)


# netlocs (host:port) of the servers being compared: hrefs pointing at them
# are compared by path and query only (the ports differ); any other href
# (the describedby link of /v1) is compared whole.
LOCAL_NETLOCS = set()


def link_paths(obj):
    """Replace every "href" and "next" URL by its path (+query) when it
    points at one of the compared servers; tuples become lists."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ('href', 'next') and isinstance(v, str):
                out[k] = _path_of(v)
            else:
                out[k] = link_paths(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [link_paths(x) for x in obj]
    return obj


def _path_of(href):
    p = urllib.parse.urlsplit(href)
    if p.netloc and LOCAL_NETLOCS and p.netloc not in LOCAL_NETLOCS:
        return href
    return p.path + ('?' + p.query if p.query else '')


MAX_FAIL_LINES = 30
GROUP_SHOWN = 3


class Checker(object):
    def __init__(self, verbose=False, accept=()):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.notes = []
        self.verbose = verbose
        self.accept = set(accept)
        # failures per group (per-node / per-conductor checks): only the
        # first GROUP_SHOWN of a group are printed
        self.group_fails = {}
        self.retried = 0

    def ok(self, what):
        self.passed += 1
        if self.verbose:
            print('PASS %s' % what)

    def fail(self, what, detail=''):
        self.failed += 1
        print('FAIL %s' % what)
        lines = str(detail).splitlines() if detail else []
        if len(lines) > MAX_FAIL_LINES:
            more = len(lines) - (MAX_FAIL_LINES - 1)
            lines = lines[:MAX_FAIL_LINES - 1] + ['... (%d more lines)' % more]
        for line in lines:
            print('     ' + line)

    def skip(self, what, why):
        self.skipped += 1
        self.notes.append('SKIP %s: %s' % (what, why))

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def eq(self, what, ironic, sidecar):
        if ironic == sidecar:
            self.ok(what)
            return True
        self.fail(what, diff(ironic, sidecar))
        return False

    def record(self, v):
        """Record a Verdict (see judge())."""
        if not v.problems:
            self.retried += bool(v.attempts)
            self.ok(v.what + (' (after %d retries)' % v.attempts
                              if v.attempts else ''))
            return True
        names = {p.difference for p in v.problems}
        if None not in names and names <= self.accept:
            self.note('NOTE accepted difference %s: %s' % (
                ','.join(sorted(names)), v.what))
            self.ok(v.what + ' (accepted difference)')
            return True
        if v.group:
            n = self.group_fails[v.group] = self.group_fails.get(v.group,
                                                                 0) + 1
            if n > GROUP_SHOWN:
                self.failed += 1
                return False
        tags = sorted(n for n in names if n)
        head = v.what
        if tags:
            head += ' [difference: %s]' % ','.join(tags)
        if all(p.volatile for p in v.problems):
            head += ' (heartbeat-timing fields still differ after %d ' \
                    'retries)' % v.attempts
        self.fail(head, '\n'.join(p.text for p in v.problems))
        return False

    def summary(self):
        for g, n in sorted(self.group_fails.items()):
            if n > GROUP_SHOWN:
                print('(%d more FAILs of %s not shown; %d in all)' % (
                    n - GROUP_SHOWN, g, n))
        for n in self.notes:
            print(n)
        if self.skipped:
            print('(%d skipped)' % self.skipped)
        print('%d passed, %d failed' % (self.passed, self.failed))
        return 1 if self.failed else 0


def diff(a, b, n=2, names=('ironic', 'sidecar')):
    import difflib
    sa = json.dumps(a, indent=1, sort_keys=True, default=str).splitlines()
    sb = json.dumps(b, indent=1, sort_keys=True, default=str).splitlines()
    return '\n'.join(difflib.unified_diff(sa, sb, names[0], names[1],
                                          lineterm='', n=n))


def _load_fleet(path):
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def _check_budget(chk, fleet, label):
    if not fleet:
        return
    elapsed = time.time() - fleet['setup_time']
    budget = fleet.get('budget_seconds', fleet.get('margin_seconds', 10))
    if elapsed < budget:
        chk.ok('timing budget (%s): %.1fs of %ss used' % (label, elapsed,
                                                        budget))
    else:
        chk.fail('timing budget (%s)' % label,
                 '%.1fs since setup > budget %ss: the just_inside/outside '
                 'conductors may have crossed heartbeat_timeout; results are '
                 'not trustworthy (rerun setup right before compare, or use '
                 'a larger --margin)' % (elapsed, budget))


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------
#
# compare checks the sidecar's contract against Ironic (README.md, "What
# compare checks"). Every check yields Problems; a problem is "volatile"
# when it can come from a heartbeat crossing heartbeat_timeout between the
# two answers (a conductor's alive, a node's conductor, which nodes a
# conductor filter lists, the hostname of /v1/nodes/{uuid}/conductor). Only
# a check whose problems are all volatile is fetched again after --settle;
# any other difference fails at once.

HDR_VERSION = 'X-OpenStack-Ironic-API-Version'
HDR_MIN = 'X-OpenStack-Ironic-API-Minimum-Version'
HDR_MAX = 'X-OpenStack-Ironic-API-Maximum-Version'
VERSION_HEADERS = (HDR_MIN, HDR_MAX, HDR_VERSION)
HDR_REQUEST_ID = 'Openstack-Request-Id'
# /v1/conductors and the node's conductor field: the sidecar's minimum
# claimable maximum.
CONDUCTORS_VERSION = (1, 49)
# Node fields the sidecar must serve wherever Ironic serves them.
REQUIRED_NODE_FIELDS = ('uuid', 'links', 'conductor')

# Differences from Ironic 21.4 that are neither part of the contract nor
# known Ironic bugs: reported as FAIL [difference: NAME] unless accepted
# with --accept NAME (then a NOTE).
DIFFERENCES = {
    'request-id': 'the sidecar\'s Openstack-Request-Id header differs from Ironic\'s',
    'version-headers': 'version headers on responses where Ironic sends '
                       'none (other than GET /)',
    'node-conductor-below-1.49': 'GET /v1/nodes/{uuid}/conductor below 1.49:'
                                 ' Ironic 406, the sidecar 404',
    'conductor-filter-limit': 'GET /v1/nodes?conductor=X&limit=N: Ironic '
                              'filters the page cut to N, the sidecar before '
                              'paging',
}


class Problem(object):
    __slots__ = ('volatile', 'text', 'difference')

    def __init__(self, text, volatile=False, difference=None):
        self.text, self.volatile, self.difference = text, volatile, difference


class Verdict(object):
    __slots__ = ('what', 'problems', 'attempts', 'result', 'group')

    def __init__(self, what, problems, attempts, result, group=None):
        self.what, self.problems = what, problems
        self.attempts, self.result = attempts, result
        self.group = group


def _ver(s):
    """'1.49' -> (1, 49); None if unparsable (compare numerically)."""
    try:
        a, b = str(s).split('.')
        return int(a), int(b)
    except (TypeError, ValueError):
        return None


def _vs(t):
    return '%d.%d' % t


def _vheaders(t):
    return {HDR_VERSION: _vs(t), 'Accept': 'application/json'}


def _strip(obj, keys):
    if isinstance(obj, dict):
        return {k: _strip(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_strip(x, keys) for x in obj]
    return obj


def json_problems(i, s, volatile=(), label='', names=('ironic', 'sidecar')):
    """Ironic's value i vs the sidecar's s (hrefs by path). Equal but for
    keys in `volatile` -> one volatile problem; key order is compared too
    (Python's json keeps it)."""
    i, s = link_paths(i), link_paths(s)
    pre = label + ': ' if label else ''
    if i == s:
        if json.dumps(i) != json.dumps(s):
            where, ki, ks = _order_diff(i, s)
            return [Problem(pre + 'same values, different key order at %s:'
                            '\n  %s: %s\n  %s: %s' % (
                                where or 'top level', names[0], ki,
                                names[1], ks))]
        return []
    vol = bool(volatile) and _strip(i, volatile) == _strip(s, volatile)
    d = diff(i, s, names=names)
    return [Problem(pre + '\n' + d if pre else d, vol)]


def _order_diff(i, s, where=''):
    """(path, keys, keys) of the first dict whose key order differs."""
    if isinstance(i, dict) and isinstance(s, dict):
        if list(i) != list(s):
            return where, list(i), list(s)
        items = [(k, i[k], s[k]) for k in i]
    elif isinstance(i, list) and isinstance(s, list):
        items = list(zip(range(len(i)), i, s))
    else:
        return None
    for k, a, b in items:
        r = _order_diff(a, b, '%s[%r]' % (where, k))
        if r:
            return r
    return None


def resp_problems(ri, rs, volatile=()):
    """status + body."""
    return json_problems([ri[0], ri[2]], [rs[0], rs[2]], volatile)


# Fields the sidecar adds to Ironic's node, documented as extensions
# (api/doc.go); named so that they cannot collide with Ironic's.
SIDECAR_EXTENSIONS = ('exporter_conductor_affinity',)


def node_problems(i, s, served, label=''):
    """A node representation: the sidecar's keys are a subset of Ironic's,
    in Ironic's order, include every field of Ironic's it serves elsewhere
    (`served`), and have Ironic's values (conductor: volatile)."""
    if not isinstance(i, dict) or not isinstance(s, dict):
        return json_problems(i, s, label=label)
    pre = label + ': ' if label else ''
    p = []
    extra = [k for k in s if k not in i and k not in SIDECAR_EXTENSIONS]
    missing = [k for k in i if k in served and k not in s]
    if extra:
        p.append(Problem(pre + 'fields Ironic does not have: %s' %
                         ', '.join(extra)))
    if missing:
        p.append(Problem(pre + 'fields missing (the sidecar serves them '
                         'elsewhere): %s' % ', '.join(missing)))
    common = [k for k in i if k in s]
    if [k for k in s if k in i] != common:
        p.append(Problem(pre + 'field order: Ironic %s, sidecar %s' % (
            common, [k for k in s if k in i])))
    p += json_problems({k: i[k] for k in common}, {k: s[k] for k in common},
                       volatile=('conductor',), label=label)
    return p


def node_list_problems(ri, rs, served, membership_volatile=False,
                       key='nodes'):
    """A node list: status, everything but the nodes (next link) exactly,
    the uuids in order (membership volatile for conductor filters), each
    node by node_problems."""
    if ri[0] != 200 or rs[0] != 200 or not isinstance(ri[2], dict) or \
            not isinstance(rs[2], dict):
        return resp_problems(ri, rs)
    bi, bs = ri[2], rs[2]
    p = json_problems({k: v for k, v in bi.items() if k != key},
                      {k: v for k, v in bs.items() if k != key},
                      label='besides "%s"' % key)
    li, ls = bi.get(key) or [], bs.get(key) or []
    ui, us = [n.get('uuid') for n in li], [n.get('uuid') for n in ls]
    if ui != us:
        oi, os_ = set(ui) - set(us), set(us) - set(ui)
        vol = membership_volatile and (oi or os_) and \
            [u for u in ui if u in us] == [u for u in us if u in ui]
        p.append(Problem('uuids differ (%d vs %d): only Ironic %s, only '
                         'sidecar %s%s' % (
                             len(ui), len(us), sorted(oi)[:4],
                             sorted(os_)[:4],
                             '' if oi or os_ else ', order differs'),
                         bool(vol)))
    smap = {n.get('uuid'): n for n in ls}
    bad = []
    for n in li:
        if n.get('uuid') in smap:
            q = node_problems(n, smap[n['uuid']], served,
                              label='node %s' % n.get('uuid'))
            if q:
                bad.append(q)
    if bad:
        lines = []
        for q in bad[:2]:
            lines += [x.text for x in q]
        p.append(Problem('%d of %d nodes differ; first:\n%s' % (
            len(bad), len(li), '\n'.join(lines)),
            all(x.volatile for q in bad for x in q)))
    return p


def header_problems(ri, rs, g, allow_extra=False):
    """Version headers and Content-Type. Where Ironic sends Min/Max the
    sidecar sends Ironic's minimum and its own maximum (g['smax']);
    X-OpenStack-Ironic-API-Version equal. Where Ironic sends none, the
    sidecar's are a difference unless allow_extra (GET /), and then they
    must be consistent."""
    hi, hs = ri[1], rs[1]
    p = []
    if hi.get('Content-Type') != hs.get('Content-Type'):
        p.append(Problem('Content-Type: Ironic %r, sidecar %r' % (
            hi.get('Content-Type'), hs.get('Content-Type'))))
    have_i = {h: hi.get(h) for h in VERSION_HEADERS if hi.get(h)}
    have_s = {h: hs.get(h) for h in VERSION_HEADERS if hs.get(h)}
    if not (hi.get(HDR_MIN) or hi.get(HDR_MAX)):
        if have_s:
            want = {HDR_MIN: _vs(g['imin']), HDR_MAX: _vs(g['smax'])}
            if HDR_VERSION in have_s:
                want[HDR_VERSION] = g['sent']
            if not allow_extra:
                p.append(Problem('Ironic sends %s, the sidecar %s' % (
                    have_i or 'no version headers', have_s),
                    difference='version-headers'))
            elif have_s != want:
                p.append(Problem('extra version headers %s inconsistent '
                                 'with %s' % (have_s, want)))
        elif have_i:
            p.append(Problem('version headers: Ironic %s, sidecar none' %
                             have_i))
        return p
    want = {HDR_MIN: hi.get(HDR_MIN), HDR_MAX: _vs(g['smax'])}
    if hi.get(HDR_VERSION):
        want[HDR_VERSION] = hi.get(HDR_VERSION)
    if have_s != want:
        p.append(Problem('version headers: Ironic %s; sidecar %s, want %s' %
                         (have_i, have_s, want)))
    return p


def version_doc_problems(i, s, g, label):
    """One version document ({id, links, status, min_version, version}):
    what openstacksdk and ironicclient discover."""
    pre = label + ': '
    if not isinstance(i, dict) or not isinstance(s, dict):
        return [Problem(pre + 'not an object: %r / %r' % (i, s))]
    p = []
    if list(s) != list(i):
        p.append(Problem(pre + 'keys: Ironic %s, sidecar %s' % (list(i),
                                                               list(s))))
    for k, want in (('id', 'v1'), ('status', 'CURRENT')):
        if s.get(k) != want or i.get(k) != want:
            p.append(Problem(pre + '%s: Ironic %r, sidecar %r (want %r)' % (
                k, i.get(k), s.get(k), want)))
    if s.get('min_version') != i.get('min_version'):
        p.append(Problem(pre + 'min_version: Ironic %r, sidecar %r' % (
            i.get('min_version'), s.get('min_version'))))
    sv, iv = _ver(s.get('version')), _ver(i.get('version'))
    if sv is None or iv is None or not CONDUCTORS_VERSION <= sv <= iv:
        p.append(Problem(pre + 'version: sidecar %r, want in [%s, Ironic '
                         '%r]' % (s.get('version'), _vs(CONDUCTORS_VERSION),
                                  i.get('version'))))
    elif sv != g['smax']:
        p.append(Problem(pre + 'version %r is not the sidecar\'s '
                         'Maximum-Version header %s' % (s.get('version'),
                                                       _vs(g['smax']))))
    p += json_problems(i.get('links'), s.get('links'), label=pre + 'links')
    return p


def root_problems(ri, rs, g):
    if ri[0] != 200 or rs[0] != 200:
        return resp_problems(ri, rs)
    i, s = ri[2], rs[2]
    p = []
    if list(s) != list(i):
        p.append(Problem('keys: Ironic %s, sidecar %s' % (list(i), list(s))))
    for k in ('name', 'description'):
        if i.get(k) != s.get(k):
            p.append(Problem('%s: Ironic %r, sidecar %r' % (k, i.get(k),
                                                            s.get(k))))
    p += version_doc_problems(i.get('default_version'),
                              s.get('default_version'), g, 'default_version')
    vi, vs = i.get('versions'), s.get('versions')
    if not isinstance(vs, list) or len(vs) != 1 or not isinstance(vi, list) \
            or len(vi) != 1:
        p.append(Problem('versions: want one entry each: Ironic %r, sidecar '
                         '%r' % (vi, vs)))
    else:
        p += version_doc_problems(vi[0], vs[0], g, 'versions[0]')
    return p


V1_OWN_KEYS = ('id', 'links', 'media_types', 'version')


def v1_problems(ri, rs, g, notes):
    if ri[0] != 200 or rs[0] != 200:
        return resp_problems(ri, rs)
    i, s = ri[2], rs[2]
    p = []
    for k in ('id', 'media_types'):
        if i.get(k) != s.get(k):
            p.append(Problem('%s: Ironic %r, sidecar %r' % (k, i.get(k),
                                                            s.get(k))))
    p += json_problems(i.get('links'), s.get('links'), label='links')
    p += version_doc_problems(i.get('version'), s.get('version'), g,
                              'version')
    extra = [k for k in s if k not in i]
    if extra:
        p.append(Problem('resources Ironic does not list: %s' % extra))
    for k in s:
        if k in i and k not in V1_OWN_KEYS:
            p += json_problems(i[k], s[k], label='resource %s' % k)
    for k in ('nodes', 'conductors'):
        if k in i and k not in s:
            p.append(Problem('resource %s not listed' % k))
    order = [k for k in i if k in s]
    if not extra and [k for k in s if k in i] != order:
        p.append(Problem('key order: Ironic %s, sidecar %s' % (order,
                                                               list(s))))
    unlisted = [k for k in i if k not in s]
    if unlisted:
        notes.append('NOTE the sidecar\'s /v1 does not list: %s' %
                     ', '.join(unlisted))
    return p


def _nvh_body(node):
    """The sidecar's 404 for /v1/nodes/{uuid}/conductor of a node no
    conductor serves (api/nodes.go: Ironic's NoValidHost message)."""
    msg = ('No valid host was found. Reason: No conductor service registered'
           ' which supports driver %s for conductor group "%s".' % (
               node.get('driver'), node.get('conductor_group')))
    return {'error_message': json.dumps({'faultcode': 'Client',
                                         'faultstring': msg,
                                         'debuginfo': None})}


class _Pair(object):
    """Fetch the same path from Ironic and the sidecar at (nearly) the same
    moment, concurrently, with the compare's version header."""

    def __init__(self, ironic, sidecar, pool, headers):
        self.ironic, self.sidecar, self.pool = ironic, sidecar, pool
        self.headers = headers

    def get(self, path, headers=None):
        h = self.headers if headers is None else headers
        fi = self.pool.submit(http_get, self.ironic, path, h)
        fs = self.pool.submit(http_get, self.sidecar, path, h)
        return fi.result(), fs.result()

    def get_all(self, path, key):
        fi = self.pool.submit(_list_all_raw, self.ironic, path, key,
                              self.headers)
        fs = self.pool.submit(_list_all_raw, self.sidecar, path, key,
                              self.headers)
        return fi.result(), fs.result()


def _list_all_raw(base, path, key, headers=None):
    """(status, None, {key: items}) following `next` links; on an error the
    error response."""
    items = []
    url = path
    for _ in range(1000):
        r = http_get(base, url, headers)
        if r[0] != 200 or not isinstance(r[2], dict):
            return r
        items.extend(r[2].get(key, []))
        nxt = r[2].get('next')
        if not nxt:
            return 200, r[1], {key: items}
        url = _path_of(nxt)
    return 200, r[1], {key: items}


def _deadline(fleet):
    """Unix time at which the first conductor that is alive at setup time
    crosses heartbeat_timeout (the just_inside ones: setup + margin)."""
    if not fleet:
        return None
    t = fleet['heartbeat_timeout']
    lives = [t - c['age_seconds'] for c in fleet['conductors']
             if c['age_seconds'] <= t]
    if not lives:
        return None
    return fleet['setup_time'] + min(lives)


def cmd_compare(a):
    import concurrent.futures
    accept = [x for group in a.accept for x in group]
    chk = Checker(verbose=a.verbose, accept=accept)
    unknown = set(accept) - set(DIFFERENCES)
    if unknown:
        raise SystemExit('--accept: unknown difference(s) %s; known: %s' % (
            ', '.join(sorted(unknown)), ', '.join(sorted(DIFFERENCES))))
    fleet = _load_fleet(a.fleet)
    I, S = a.ironic.rstrip('/'), a.sidecar.rstrip('/')
    same = I == S
    for base in (I, S):
        LOCAL_NETLOCS.add(urllib.parse.urlsplit(base).netloc)
    t_start = time.time()
    deadline = _deadline(fleet)
    # two pools: tasks (outer) wait on requests (inner); one shared pool
    # would deadlock once every worker waits on its own sub-requests.
    pool = concurrent.futures.ThreadPoolExecutor(max(2, a.jobs))
    req_pool = concurrent.futures.ThreadPoolExecutor(max(4, 3 * a.jobs + 4))

    def in_budget():
        return deadline is None or time.time() < deadline - a.safety

    def judge(what, fetch, check, first=None, group=None):
        """Fetch (unless `first` is given) and check; when every problem
        is volatile, fetch again after --settle, up to --retries times.
        Runs in worker threads: returns a Verdict, records nothing."""
        attempt = 0
        while True:
            r = first if (first is not None and attempt == 0) else fetch()
            probs = check(r)
            if not probs or attempt >= a.retries or \
                    not all(p.volatile for p in probs):
                return Verdict(what, probs, attempt, r, group)
            attempt += 1
            time.sleep(a.settle)

    def run(tasks):
        """Run callables returning lists of Verdicts concurrently; record
        them in task order. A task that raises is a failure."""
        def safe(t):
            try:
                return t()
            except Exception:
                import traceback
                return [Verdict('harness error', [Problem(
                    traceback.format_exc())], 0, None)]
        for vs in pool.map(safe, tasks):
            for v in vs:
                chk.record(v)

    if deadline is not None and not in_budget():
        chk.fail('timing budget at start',
                 '%.1fs since setup; the first alive conductor crosses '
                 'heartbeat_timeout %.1fs after setup (minus %.1fs safety). '
                 'Run `heartbeat` (or setup) right before compare, or use a '
                 'larger setup --margin.' % (
                     time.time() - fleet['setup_time'],
                     deadline - fleet['setup_time'], a.safety))

    # ---- Microversions: GET /v1 without a version header (the headers
    # ironicclient negotiates with) ----
    fi = req_pool.submit(http_get, I, '/v1', NO_VERSION)
    fs = req_pool.submit(http_get, S, '/v1', NO_VERSION)
    ri0, rs0 = fi.result(), fs.result()
    g = {'imin': _ver(ri0[1].get(HDR_MIN)), 'imax': _ver(ri0[1].get(HDR_MAX)),
         'smin': _ver(rs0[1].get(HDR_MIN)), 'smax': _ver(rs0[1].get(HDR_MAX))}
    if None in g.values():
        chk.fail('GET /v1 (no version header): Minimum/Maximum-Version '
                 'headers', 'Ironic %s %s; sidecar %s %s' % (
                     ri0[0], {h: ri0[1].get(h) for h in VERSION_HEADERS},
                     rs0[0], {h: rs0[1].get(h) for h in VERSION_HEADERS}))
        return chk.summary()
    rng = 'Ironic [%s, %s], sidecar [%s, %s]' % (
        _vs(g['imin']), _vs(g['imax']), _vs(g['smin']), _vs(g['smax']))
    if g['smin'] == g['imin'] and \
            CONDUCTORS_VERSION <= g['smax'] <= g['imax']:
        chk.ok('microversion range (%s)' % rng)
    else:
        chk.fail('microversion range', '%s: the sidecar\'s minimum must be '
                 'Ironic\'s and its maximum in [%s, Ironic\'s]' % (
                     rng, _vs(CONDUCTORS_VERSION)))
    V = min(g['imax'], g['smax'])
    g['sent'] = _vs(V)
    H = _vheaders(V)
    P = _Pair(I, S, req_pool, H)
    print('microversions: %s; comparing with %s: %s' % (rng, HDR_VERSION,
                                                         _vs(V)))

    # ---- Phase A (inside the time budget): the whole topology at once ----
    fa = {
        'cond': pool.submit(P.get_all, '/v1/conductors?detail=True',
                            'conductors'),
        'nodes': pool.submit(P.get_all, '/v1/nodes/detail', 'nodes'),
    }
    rci, rcs = fa['cond'].result()
    rni, rns = fa['nodes'].result()
    phase_a_ok = in_budget()
    if deadline is not None:
        if phase_a_ok:
            chk.ok('timing budget: phase A done %.1fs after setup (deadline '
                   '%.1fs)' % (time.time() - fleet['setup_time'],
                               deadline - fleet['setup_time']))
        else:
            chk.fail('timing budget: phase A',
                     'finished %.1fs after setup, past the deadline %.1fs: '
                     'alive/ring results may straddle a heartbeat crossing'
                     % (time.time() - fleet['setup_time'],
                        deadline - fleet['setup_time']))
    for what, ri, rs in (('GET /v1/conductors?detail=True', rci, rcs),
                         ('GET /v1/nodes/detail', rni, rns)):
        if ri[0] != 200 or rs[0] != 200:
            chk.fail(what + ' status', 'ironic %s %s\nsidecar %s %s' % (
                ri[0], json.dumps(ri[2])[:300] if ri[0] != 200 else '',
                rs[0], json.dumps(rs[2])[:300] if rs[0] != 200 else ''))
    if rci[0] != 200 or rcs[0] != 200 or rni[0] != 200 or rns[0] != 200:
        return chk.summary()
    ilist, slist = rci[2]['conductors'], rcs[2]['conductors']
    inodes_l, snodes_l = rni[2]['nodes'], rns[2]['nodes']
    ic = {c['hostname']: c for c in ilist}

    # conductors: everything; alive is volatile, but phase A is inside the
    # budget, so no retry here
    chk.record(Verdict('GET /v1/conductors?detail=True (all pages)',
                       json_problems(ilist, slist), 0, None))
    # nodes: the fields the sidecar serves (a subset of Ironic's)
    ikeys = []
    for n in inodes_l:
        ikeys += [k for k in n if k not in ikeys]
    served = set(REQUIRED_NODE_FIELDS)
    for n in snodes_l:
        served.update(n)
    unserved = [k for k in ikeys if k not in served]
    if unserved:
        chk.note('NOTE node fields Ironic serves at %s and the sidecar does '
                 'not (%d): %s' % (_vs(V), len(unserved),
                                   ', '.join(unserved)))
    chk.record(Verdict('GET /v1/nodes/detail (all pages; served fields)',
                       node_list_problems(rni, rns, served), 0, None))

    inodes = {n['uuid']: n for n in inodes_l}
    conductor_of = {u: n.get('conductor') for u, n in inodes.items()}
    expected_by_host = {}
    for u, c in conductor_of.items():
        if c:
            expected_by_host.setdefault(c, set()).add(u)
    if fleet:
        chk.eq('fleet conductors are all listed by Ironic',
               sorted(c['hostname'] for c in fleet['conductors']), sorted(ic))
        chk.eq('fleet nodes are all listed by Ironic',
               sorted(n['uuid'] for n in fleet['nodes']), sorted(inodes))
        if phase_a_ok:
            # Ironic's alive == heartbeat not older than heartbeat_timeout;
            # `online` is ignored (an offline conductor with a fresh heartbeat
            # is alive).
            for c in fleet['conductors']:
                want = c['age_seconds'] <= fleet['heartbeat_timeout']
                if c['hostname'] in ic:
                    chk.eq('fleet intent: %s (%s, online=%s, age %ss) alive'
                           % (c['hostname'], c['category'], c['online'],
                              c['age_seconds']),
                           want, ic[c['hostname']].get('alive'))
    stats = {'nodes': len(inodes),
             'with_conductor': sum(1 for v in conductor_of.values() if v),
             'conductors': len(ic),
             'alive': sum(1 for c in ic.values() if c.get('alive'))}
    print('topology: %(conductors)d conductors (%(alive)d alive), %(nodes)d '
          'nodes, %(with_conductor)d mapped to a conductor' % stats)

    # ---- Phase B: every endpoint, Ironic and the sidecar side by side ----
    tasks = []

    def task(what, fetch, check):
        tasks.append(lambda: [judge(what, fetch, check)])

    def get(path, headers=None):
        return lambda: P.get(path, headers)

    def both(*checks):
        return lambda r: [p for c in checks for p in c(r)]

    # version documents and headers
    task('GET / (version discovery)', get('/'),
         both(lambda r: root_problems(r[0], r[1], g),
              lambda r: header_problems(r[0], r[1], g, allow_extra=True)))
    v1_notes = []
    for path in ('/v1', '/v1/'):
        task('GET %s (v1 document, headers)' % path, get(path),
             both(lambda r: v1_problems(r[0], r[1], g, v1_notes),
                  lambda r: header_problems(r[0], r[1], g)))

    # Openstack-Request-Id: Ironic sends one on most responses
    def request_ids():
        return [(path,) + P.get(path) for path in (
            '/', '/v1', '/v1/conductors', '/v1/nodes/no-such-node')]

    def request_ids_check(res):
        out = ['%s: Ironic %r, sidecar %r' % (
            path, ri[1].get(HDR_REQUEST_ID), rs[1].get(HDR_REQUEST_ID))
            for path, ri, rs in res
            if bool(ri[1].get(HDR_REQUEST_ID)) !=
            bool(rs[1].get(HDR_REQUEST_ID))]
        return [Problem('\n'.join(out), difference='request-id')] \
            if out else []
    task('%s header (on /, /v1, /v1/conductors, a 404)' % HDR_REQUEST_ID,
         request_ids, request_ids_check)

    # no version header: Ironic answers as its minimum (why every other
    # request carries an explicit version), the sidecar as its maximum
    def ironic_noversion(r):
        p = []
        if r[0][1].get(HDR_VERSION) != _vs(g['imin']):
            p.append(Problem('Ironic GET /v1 without a version header: '
                             'Version %r, want its minimum %s' % (
                                 r[0][1].get(HDR_VERSION), _vs(g['imin']))))
        if r[1][0] != 404:
            p.append(Problem('Ironic GET /v1/conductors without a version '
                             'header: %s, want 404 (1.1)' % r[1][0]))
        return p
    tasks.append(lambda: [judge(
        'Ironic without a version header answers as %s' % _vs(g['imin']),
        lambda: (ri0, http_get(I, '/v1/conductors', NO_VERSION)),
        ironic_noversion)])
    if not same:
        def side_noversion():
            out = []
            hmax = _vheaders(g['smax'])
            for path in ('/v1', '/v1/conductors', '/v1/nodes?limit=3'):
                f1 = req_pool.submit(http_get, S, path, NO_VERSION)
                f2 = req_pool.submit(http_get, S, path, hmax)
                out.append((path, f1.result(), f2.result()))
            return out

        def side_noversion_check(res):
            p = []
            for path, rn, rm in res:
                if rn[1].get(HDR_VERSION) != _vs(g['smax']):
                    p.append(Problem('%s: Version header %r, want %s' % (
                        path, rn[1].get(HDR_VERSION), _vs(g['smax']))))
                p += json_problems([rm[0], rm[2]], [rn[0], rn[2]],
                                   volatile=('alive',),
                                   label='%s: explicit %s vs none' % (
                                       path, _vs(g['smax'])))
            return p
        task('sidecar without a version header answers as its maximum %s'
             % _vs(g['smax']), side_noversion, side_noversion_check)

    # conductor lists (alive volatile)
    for path in ('/v1/conductors', '/v1/conductors/',
                 '/v1/conductors?limit=2',
                 '/v1/conductors?detail=True&limit=2',
                 '/v1/conductors?fields=hostname,alive',
                 '/v1/conductors?sort_key=hostname&sort_dir=desc'):
        task('GET %s' % path, get(path),
             lambda r: resp_problems(r[0], r[1], volatile=('alive',)))
    task('GET /v1/conductors headers', get('/v1/conductors'),
         lambda r: header_problems(r[0], r[1], g))

    # errors and versions: status, body and headers exactly
    some = sorted(inodes)[0]
    busy = max(expected_by_host, key=lambda h: len(expected_by_host[h]),
               default='no-such-conductor')
    plain = [h for h in ic if ':' not in h] or ['no-such-conductor']
    v148 = _vheaders((1, 48))
    q = lambda x: urllib.parse.quote(x, safe=':')
    for path, hdrs, note in (
            ('/v1/conductors/no-such-conductor.example', None, ''),
            ('/v1/nodes/00000000-0000-4000-8000-000000000000', None, ''),
            ('/v1/nodes/no-such-node', None, ''),
            ('/v1/nodes/no-such-node/conductor', None, ''),
            ('/v1/nodes/bad%20name', None, ' (pecan 400)'),
            ('/v1/nope', None, ' (unknown path)'),
            ('/v1/conductors?sort_key=alive', None, ''),
            ('/v1/conductors?detail=True&fields=hostname', None, ''),
            ('/v1/nodes?limit=0', None, ''),
            ('/v1/conductors', v148, ' at 1.48'),
            ('/v1/conductors/%s' % q(plain[0]), v148, ' at 1.48'),
            ('/v1/nodes?conductor=%s' % q(busy), v148, ' at 1.48'),
            ('/v1/conductors', {HDR_VERSION: 'abc',
                                'Accept': 'application/json'},
             ' (invalid version)')):
        task('GET %s%s (status, body, headers)' % (path, note),
             get(path, hdrs),
             both(lambda r: resp_problems(r[0], r[1]),
                  lambda r: header_problems(r[0], r[1], g)))

    def too_high(r):
        # the 406 names the supported range: the sidecar's own maximum
        ri, rs = r
        body = ri[2]
        if isinstance(body, dict) and isinstance(body.get('error_message'),
                                                 str):
            body = dict(body, error_message=body['error_message'].replace(
                '%s]' % _vs(g['imax']), '%s]' % _vs(g['smax'])))
        return resp_problems((ri[0], ri[1], body), rs) + \
            header_problems(ri, rs, g)
    task('GET /v1/conductors at 1.99 (406 naming each server\'s range)',
         get('/v1/conductors', _vheaders((1, 99))), too_high)

    def sub_148(r):
        ri, rs = r
        p = resp_problems(ri, rs) + header_problems(ri, rs, g)
        if ri[0] == 406 and rs[0] == 404:
            for x in p:
                x.difference = 'node-conductor-below-1.49'
        return p
    task('GET /v1/nodes/%s/conductor at 1.48' % some,
         get('/v1/nodes/%s/conductor' % some, v148), sub_148)
    task('GET /v1/nodes/%s at 1.48 (no conductor field)' % some,
         get('/v1/nodes/%s' % some, v148),
         lambda r: node_problems(r[0][2], r[1][2], served) +
         resp_problems((r[0][0], None, None), (r[1][0], None, None)))

    # node lists (every node representation: served fields)
    for path in ('/v1/nodes', '/v1/nodes?detail=True', '/v1/nodes?limit=2',
                 '/v1/nodes/detail?limit=2', '/v1/nodes?detail=True&limit=2'):
        task('GET %s' % path, get(path),
             lambda r: node_list_problems(r[0], r[1], served))

    # each conductor
    def one_conductor(h):
        path = '/v1/conductors/%s' % q(h)
        ri, rs = P.get(path)
        if ri[0] == 400 and ':' in h:
            # Ironic 21.4 validates {hostname} with args.name (RFC 3986
            # unreserved characters only): host:port hostnames get a 400.
            if same:
                return [Verdict(path + ' (Ironic vs Ironic: 400 both)',
                                resp_problems(ri, rs), 0, None,
                                'GET /v1/conductors/{hostname}')]

            def fetch():
                fl = req_pool.submit(http_get, I,
                                     '/v1/conductors?detail=True', H)
                return fl.result(), http_get(S, path, H)

            def check(r):
                rl, rs2 = r
                want = [c for c in (rl[2] or {}).get('conductors', [])
                        if c['hostname'] == h]
                return json_problems([200] + want[:1], [rs2[0], rs2[2]],
                                     volatile=('alive',))
            return [judge('GET %s: sidecar 200 == Ironic\'s detail entry '
                          '(Ironic: 400)' % path, fetch, check,
                          first=(rci, rs),
                          group='GET /v1/conductors/{hostname}')]
        return [judge('GET %s' % path, lambda: P.get(path),
                      lambda r: resp_problems(r[0], r[1],
                                              volatile=('alive',)),
                      first=(ri, rs), group='GET /v1/conductors/{hostname}')]
    for h in ic:
        tasks.append(lambda h=h: one_conductor(h))
    if any(':' in h for h in ic):
        chk.note('NOTE Ironic 21.4 answers 400 for GET /v1/conductors/'
                 '{host:port}; the sidecar must answer 200 with the detail '
                 'entry')

    # case variants: lookups are the database's comparison (PostgreSQL and
    # SQLite: case-sensitive -> 404; MySQL/MariaDB: case-insensitive
    # collation -> 200 with the stored hostname); ?conductor= is an exact
    # Python comparison on every backend.
    for h in [x for x in ic if ':' not in x][:2]:
        v = q(h.swapcase())
        task('GET /v1/conductors/%s (case variant)' % v,
             get('/v1/conductors/%s' % v),
             lambda r: resp_problems(r[0], r[1], volatile=('alive',)))
        task('GET /v1/nodes?conductor=%s (case variant)' % v,
             get('/v1/nodes?conductor=%s' % v),
             lambda r: node_list_problems(r[0], r[1], served))

    # ?conductor= for every conductor hostname (+ a missing one): the
    # lists and, inside the budget, Ironic's list == detail's conductor
    def filt(h):
        out = []
        for form in ('/v1/nodes?conductor=%s', '/v1/nodes/?conductor=%s',
                     '/v1/nodes/detail?conductor=%s'):
            path = form % q(h)
            v = judge('GET %s' % path,
                      lambda path=path: P.get_all(path, 'nodes'),
                      lambda r: node_list_problems(
                          r[0], r[1], served, membership_volatile=True),
                      group='GET ' + form % '{hostname}')
            out.append(v)
            ri = v.result[0]
            if ri[0] == 200 and in_budget():
                got = sorted(n['uuid'] for n in ri[2]['nodes'])
                want = sorted(expected_by_host.get(h, ()))
                out.append(Verdict(
                    'ironic GET %s == nodes whose detail conductor is %s' % (
                        path, h),
                    [] if got == want else [Problem(diff(
                        want, got, names=('detail', 'ironic')))], 0,
                    None, 'ironic ?conductor= == detail'))
        return out
    for h in list(ic) + ['no-such-conductor']:
        tasks.append(lambda h=h: filt(h))

    # ?conductor=X&limit=3: Ironic 21.4 filters the page already cut to 3
    # nodes (so the page has only those of the first 3 nodes that match);
    # the sidecar filters first (the first 3 that match, next link when
    # there are more). Anything else is checked as usual.
    first3 = [n['uuid'] for n in inodes_l[:3]]

    def filt_limit(r):
        ri, rs, rall = r
        p = node_list_problems(ri, rs, served, membership_volatile=True)
        if not p or ri[0] != 200 or rs[0] != 200 or rall[0] != 200:
            return p
        allu = [n['uuid'] for n in rall[2].get('nodes', [])]
        iu = [n['uuid'] for n in ri[2].get('nodes', [])]
        su = [n['uuid'] for n in rs[2].get('nodes', [])]
        if iu == [u for u in first3 if u in allu] and su == allu[:3] and \
                bool(rs[2].get('next')) == (len(allu) > 3) and \
                not node_list_problems(
                    ri, (200, None, {'nodes': [n for n in rs[2]['nodes']
                                               if n['uuid'] in iu]}),
                    served):
            return [Problem('Ironic lists %s (the matches among the first 3 '
                            'nodes), the sidecar %s (the first 3 matches; '
                            'next link %s)' % (
                                iu, su, 'present' if rs[2].get('next')
                                else 'absent'),
                            difference='conductor-filter-limit')]
        return p
    lpath = '/v1/nodes?conductor=%s&limit=3' % q(busy)
    task('GET %s' % lpath,
         lambda: P.get(lpath) + (http_get(S, '/v1/nodes?conductor=%s' %
                                          q(busy), H),),
         filt_limit)

    # /v1/nodes?fields=uuid,name,conductor (Ironic 21.4: 500, bug)
    fpath = '/v1/nodes?fields=uuid,name,conductor'

    def fields_list():
        ri, rs = P.get(fpath)
        if ri[0] == 200 or same:
            return [judge('GET %s' % fpath, lambda: P.get(fpath),
                          lambda r: node_list_problems(r[0], r[1], served),
                          first=(ri, rs))]
        if rs[0] == 200:
            keep = ('uuid', 'name', 'links', 'conductor')

            def fetch():
                return (P.get_all('/v1/nodes/detail', 'nodes')[0],
                        P.get(fpath)[1])

            def check(r):
                rd, rs2 = r
                if rd[0] != 200:
                    return resp_problems(rd, rs2)
                exp = {'nodes': [{k: v for k, v in n.items() if k in keep}
                                 for n in rd[2]['nodes']]}
                return node_list_problems((200, None, exp), rs2, keep,
                                          membership_volatile=False)
            chk.note('NOTE GET %s: Ironic 21.4 answers %s; the sidecar\'s 200'
                     ' is checked against Ironic\'s detail list' % (fpath,
                                                                 ri[0]))
            return [judge('GET %s: sidecar 200 == Ironic\'s detail (Ironic: '
                          '%s)' % (fpath, ri[0]), fetch, check)]
        return [Verdict('GET %s' % fpath, [Problem(
            'Ironic %s, sidecar %s' % (ri[0], rs[0]))], 0, None)]
    tasks.append(fields_list)

    # per node: ?fields=uuid,conductor, the node (by name if it has one),
    # and /v1/nodes/{uuid}/conductor
    def sub_fetch(path):
        ri, rs = P.get(path)
        rc = None
        if not same and rs[0] == 200 and isinstance(rs[2], dict) and \
                rs[2].get('hostname'):
            rc = http_get(S, '/v1/conductors/%s' % q(rs[2]['hostname']), H)
        return ri, rs, rc, path

    def sub_check(u):
        def check(r):
            ri, rs, rc, spath = r
            if same:
                return resp_problems(ri, rs, volatile=('conductor',))
            if ri[0] != 200 or not isinstance(ri[2], dict):
                return [Problem('Ironic answered %s %s' % (
                    ri[0], json.dumps(ri[2])[:200]))]
            host_i = ri[2].get('conductor')
            p = []
            if rs[0] == 200 and isinstance(rs[2], dict):
                host_s = rs[2].get('hostname')
                if rc is not None:
                    p += json_problems([rc[0], rc[2]], [rs[0], rs[2]],
                                       volatile=('alive',),
                                       label='sidecar body vs its own GET '
                                       '/v1/conductors/%s' % host_s,
                                       names=('sidecar /v1/conductors/%s'
                                              % host_s, 'sidecar ' +
                                              spath))
            elif rs[0] == 404:
                host_s = None
                want = _nvh_body(inodes[u])
                if rs[2] != want:
                    # a 404 other than NoValidHost
                    p.append(Problem('sidecar 404 body %s, want %s' % (
                        json.dumps(rs[2]), json.dumps(want))))
            else:
                return [Problem('sidecar answered %s %s' % (
                    rs[0], json.dumps(rs[2])[:300]))]
            if host_i != host_s:
                p.append(Problem('conductor: Ironic %r, sidecar %r' % (
                    host_i, host_s), volatile=True))
            return p
        return check

    def one_node(u):
        n = inodes[u]
        ident = n.get('name') or u
        out = []
        for key, form, path in (
                ('fields', '/v1/nodes/{uuid}?fields=uuid,conductor',
                 '/v1/nodes/%s?fields=uuid,conductor' % u),
                ('show', '/v1/nodes/{ident}', '/v1/nodes/%s' % q(ident)),
                ('sub', '/v1/nodes/{uuid}/conductor',
                 '/v1/nodes/%s/conductor' % u)):
            if key == 'sub':
                v = judge('GET %s (hostname; sidecar: the conductor, 404 '
                          'when none)' % path,
                          lambda path=path: sub_fetch(path), sub_check(u),
                          group='GET ' + form)
                ri = v.result[0]
                got = (ri[2] or {}).get('conductor') if ri[0] == 200 \
                    else None
            else:
                v = judge('GET %s' % path, lambda path=path: P.get(path),
                          lambda r: node_problems(r[0][2], r[1][2], served)
                          + resp_problems((r[0][0], None, None),
                                          (r[1][0], None, None)),
                          group='GET ' + form)
                ri = v.result[0]
                got = (ri[2] or {}).get('conductor')
            out.append(v)
            if in_budget() and got != conductor_of[u]:
                out.append(Verdict('ironic %s conductor == detail list' %
                                   path, [Problem('%r != %r' % (
                                       got, conductor_of[u]))], 0, None,
                                   'ironic %s conductor == detail' % form))
        return out
    for u in sorted(inodes):
        tasks.append(lambda u=u: one_node(u))

    run(tasks)
    for n in v1_notes[:1]:
        chk.note(n)
    if chk.retried:
        chk.note('NOTE %d checks passed only after a retry (heartbeat-timing '
                 'differences that settled)' % chk.retried)
    if deadline is not None:
        left = deadline - time.time()
        chk.note('NOTE compare took %.1fs; %s' % (
            time.time() - t_start,
            'deadline not reached (%.1fs left)' % left if left > 0 else
            'phase B ran %.1fs past the first heartbeat crossing (pairs '
            'compared at the same moment, retried after --settle)' % -left))
    pool.shutdown()
    req_pool.shutdown()
    return chk.summary()


# --------------------------------------------------------------------------
# cli
# --------------------------------------------------------------------------

def _baremetal(endpoint, args, api_version='latest'):
    """Run the stock CLI. --os-auth-type none + --os-endpoint is what works
    against a noauth endpoint (keystoneauth 'none' plugin; ironicclient sends
    X-Auth-Token: notused)."""
    cmd = ['baremetal', '--os-endpoint', endpoint, '--os-auth-type', 'none',
           '--os-baremetal-api-version', api_version] + args
    env = dict(os.environ)
    for k in list(env):
        if k.startswith('OS_'):
            del env[k]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr, cmd


def _truth(base):
    """Expected answers, fetched from Ironic right before each CLI run."""
    st, _h, body = http_get(base, '/v1/conductors?detail=True')
    if st != 200:
        raise RuntimeError('truth GET /v1/conductors?detail=True: %s %s'
                           % (st, body))
    conds = {c['hostname']: c for c in body['conductors']}
    st, _h, body = _list_all_raw(base, '/v1/nodes/detail', 'nodes')
    if st != 200:
        raise RuntimeError('truth GET /v1/nodes/detail: %s' % st)
    nodes = {n['uuid']: n for n in body['nodes']}
    return conds, nodes


def cmd_cli(a):
    import concurrent.futures
    chk = Checker(verbose=a.verbose)
    fleet = _load_fleet(a.fleet)
    ep = a.endpoint.rstrip('/')
    truth_base = (a.truth or ep).rstrip('/')
    conds, nodes = _truth(truth_base)

    def parse(out):
        try:
            return json.loads(out)
        except ValueError:
            return {'unparsable output': out[:500]}

    # Each case: (what, argv, fn(conds, nodes, rc, out, err) -> (want, got))
    cases = []

    def c_list(conds, nodes, rc, out, err):
        want = sorted([h, c['conductor_group'], c['alive']]
                      for h, c in conds.items())
        got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
        if isinstance(got, list):
            got = sorted([r.get('Hostname'), r.get('Conductor Group'),
                          r.get('Alive')] for r in got)
        return want, got
    cases.append(('baremetal conductor list', ['conductor', 'list'], c_list))

    def c_long(conds, nodes, rc, out, err):
        want = sorted([h, c['conductor_group'], c['alive'],
                       sorted(c['drivers'] or []), c['created_at'],
                       c['updated_at']] for h, c in conds.items())
        got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
        if isinstance(got, list):
            got = sorted([r.get('Hostname'), r.get('Conductor Group'),
                          r.get('Alive'), sorted(r.get('Drivers') or []),
                          r.get('Created At'), r.get('Updated At')]
                         for r in got)
        return want, got
    cases.append(('baremetal conductor list --long',
                  ['conductor', 'list', '--long'], c_long))

    def c_show(h, hostport):
        def fn(conds, nodes, rc, out, err):
            c = conds.get(h)
            want = None if c is None else {
                'hostname': h, 'conductor_group': c['conductor_group'],
                'alive': c['alive'], 'drivers': sorted(c['drivers'] or []),
                'created_at': c['created_at'], 'updated_at': c['updated_at']}
            if rc != 0:
                if hostport and a.ironic_endpoint and \
                        'Expected name for hostname' in err and \
                        '(HTTP 400)' in err:
                    # Ironic 21.4: host:port hostnames are rejected.
                    return 'HTTP 400 Expected name', 'HTTP 400 Expected name'
                return want, {'rc': rc, 'err': err[-500:]}
            got = parse(out)
            if isinstance(got.get('drivers'), list):
                got['drivers'] = sorted(got['drivers'])
            return want, {k: got.get(k) for k in (want or got)}
        return fn
    show_hosts = sorted(conds)
    if a.conductor_sample and len(show_hosts) > a.conductor_sample:
        # keep at least one host:port and one plain hostname
        hp = [h for h in show_hosts if ':' in h][:1]
        pl = [h for h in show_hosts if ':' not in h][:1]
        rest = [h for h in show_hosts if h not in hp + pl]
        show_hosts = sorted(hp + pl + random.Random(1).sample(
            rest, max(0, a.conductor_sample - len(hp + pl))))
    for h in show_hosts:
        cases.append(('baremetal conductor show %s' % h,
                      ['conductor', 'show', h], c_show(h, ':' in h)))

    def c_missing(kind):
        def fn(conds, nodes, rc, out, err):
            last = err.strip().splitlines()[-1] if err.strip() else ''
            return ('rc!=0, "could not be found. (HTTP 404)"',
                    'rc!=0, "could not be found. (HTTP 404)"'
                    if rc != 0 and 'could not be found. (HTTP 404)' in last
                    else {'rc': rc, 'out': out[-300:], 'err': last})
        return fn
    cases.append(('baremetal conductor show no-such-conductor',
                  ['conductor', 'show', 'no-such-conductor'],
                  c_missing('conductor')))
    cases.append(('baremetal node show no-such-node',
                  ['node', 'show', 'no-such-node'], c_missing('node')))

    def c_filter(h):
        def fn(conds, nodes, rc, out, err):
            want = sorted(u for u, n in nodes.items()
                          if n.get('conductor') == h)
            got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
            if isinstance(got, list):
                got = sorted(r.get('UUID') for r in got)
            return want, got
        return fn
    # every conductor that has nodes, one that has none, and a missing one
    busy = sorted({n['conductor'] for n in nodes.values()
                   if n.get('conductor')})
    idle = [h for h in sorted(conds) if h not in busy][:1]
    for h in busy + idle + ['no-such-conductor']:
        cases.append(('baremetal node list --conductor %s' % h,
                      ['node', 'list', '--conductor', h, '--fields', 'uuid'],
                      c_filter(h)))

    def c_long_nodes(conds, nodes, rc, out, err):
        # `node list --long` reads /v1/nodes/detail and shows Conductor
        want = {u: n.get('conductor') for u, n in nodes.items()}
        got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
        if isinstance(got, list):
            got = {r.get('UUID'): r.get('Conductor') for r in got}
        return want, got
    cases.append(('baremetal node list --long (Conductor column)',
                  ['node', 'list', '--long'], c_long_nodes))

    def c_fields_list(conds, nodes, rc, out, err):
        # Ironic 21.4 answers 500 to GET /v1/nodes/?fields=uuid,conductor
        if rc != 0 and a.ironic_endpoint and \
                "has no attribute 'conductor' (HTTP 500)" in err:
            return 'HTTP 500 (Ironic 21.4 bug)', 'HTTP 500 (Ironic 21.4 bug)'
        want = {u: n.get('conductor') for u, n in nodes.items()}
        got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
        if isinstance(got, list):
            got = {r.get('UUID'): r.get('Conductor') for r in got}
        return want, got
    cases.append(('baremetal node list --fields uuid conductor',
                  ['node', 'list', '--fields', 'uuid', 'conductor'],
                  c_fields_list))

    def c_node(u, ident):
        def fn(conds, nodes, rc, out, err):
            want = {'uuid': u, 'conductor': nodes[u].get('conductor')}
            got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
            return want, got
        return fn
    rng = random.Random(0)
    sample = sorted(nodes)
    if a.node_sample and len(sample) > a.node_sample:
        sample = sorted(rng.sample(sample, a.node_sample))
    srt = sorted(nodes.items())
    extra = [u for u, n in srt if n.get('conductor') is None][:1]
    extra += [u for u, n in srt if n.get('conductor') and
              ':' in n['conductor']][:1]
    extra += [u for u, n in srt if n.get('name')][:1]
    for u in sorted(set(sample + extra)):
        ident = nodes[u].get('name') or u
        cases.append(('baremetal node show %s --fields uuid conductor' % ident,
                      ['node', 'show', ident, '--fields', 'uuid',
                       'conductor'], c_node(u, ident)))

    def run(case):
        what, argv, fn = case
        for attempt in range(a.retries + 1):
            cn, nd = _truth(truth_base) if attempt or a.fresh_truth else \
                (conds, nodes)
            rc, out, err, _cmd = _baremetal(ep, argv + ['-f', 'json'])
            want, got = fn(cn, nd, rc, out, err)
            if want == got:
                return what, attempt, None
            if attempt < a.retries:
                time.sleep(a.settle)
        return what, attempt, diff(want, got)

    pool = concurrent.futures.ThreadPoolExecutor(max(1, a.jobs))
    for what, attempt, d in pool.map(run, cases):
        if d is None:
            chk.ok(what + (' (after %d retries)' % attempt if attempt
                           else ''))
        else:
            chk.fail(what, d)
    pool.shutdown()
    if fleet:
        dl = _deadline(fleet)
        if dl is not None and time.time() > dl:
            chk.notes.append('NOTE cli ran past the first heartbeat crossing'
                             ' (%.1fs after setup); each CLI answer was '
                             'checked against Ironic fetched around it' % (
                                 time.time() - fleet['setup_time']))
    return chk.summary()


# --------------------------------------------------------------------------
# capture: save real Ironic responses (status, headers, body) as files
# --------------------------------------------------------------------------

def _raw_request(base, path, headers, method='GET'):
    import http.client
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)
    conn.request(method, path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    out = {'status': r.status, 'reason': r.reason,
           'headers': [[k, v] for k, v in r.getheaders()],
           'body_text': body.decode('utf-8', 'replace')}
    try:
        out['body_json'] = json.loads(body) if body else None
    except ValueError:
        pass
    conn.close()
    return out


def cmd_capture(a):
    base = a.ironic.rstrip('/')
    os.makedirs(a.out, exist_ok=True)
    L = {'X-OpenStack-Ironic-API-Version': 'latest'}
    st, _h, det = http_get(base, '/v1/conductors?detail=True')
    conds = det['conductors']
    plain = [c['hostname'] for c in conds if ':' not in c['hostname']]
    hp = [c['hostname'] for c in conds if ':' in c['hostname']]
    alive_any = [c['hostname'] for c in conds if c['alive']]
    st, _h, nd = http_get(base, '/v1/nodes/detail')
    nodes = nd['nodes']
    with_c = [n for n in nodes if n.get('conductor')]
    without_c = [n for n in nodes if not n.get('conductor')]
    named = [n for n in with_c if n.get('name')]
    n1 = with_c[0]['uuid'] if with_c else nodes[0]['uuid']
    n0 = without_c[0]['uuid'] if without_c else nodes[0]['uuid']
    busy = with_c[0]['conductor'] if with_c else (alive_any or [''])[0]
    q = lambda x: urllib.parse.quote(x, safe=':')
    cases = [
        ('root-noversion', '/', {}),
        ('root-latest', '/', L),
        ('v1-noversion', '/v1', {}),
        ('v1-latest', '/v1', L),
        ('v1-slash-latest', '/v1/', L),
        ('conductors-list', '/v1/conductors', L),
        ('conductors-list-slash', '/v1/conductors/', L),
        ('conductors-list-detail', '/v1/conductors?detail=True', L),
        ('conductors-list-limit2', '/v1/conductors?limit=2', L),
        ('conductors-list-detail-limit2',
         '/v1/conductors?detail=True&limit=2', L),
        ('conductors-list-fields', '/v1/conductors?fields=hostname,alive', L),
        ('conductors-list-v1.48', '/v1/conductors',
         {'X-OpenStack-Ironic-API-Version': '1.48'}),
        ('conductors-list-noversion', '/v1/conductors', {}),
        ('conductors-list-v1.49', '/v1/conductors',
         {'X-OpenStack-Ironic-API-Version': '1.49'}),
        ('conductors-list-v1.99-406', '/v1/conductors',
         {'X-OpenStack-Ironic-API-Version': '1.99'}),
        ('conductors-list-badversion-406', '/v1/conductors',
         {'X-OpenStack-Ironic-API-Version': 'abc'}),
        ('conductors-list-detail-and-fields-400',
         '/v1/conductors?detail=True&fields=hostname', L),
        ('conductor-show', '/v1/conductors/%s' % q(plain[0]) if plain
         else '/v1/conductors/x', L),
        ('conductor-show-hostport-400', '/v1/conductors/%s' % q(hp[0]) if hp
         else '/v1/conductors/a:1', L),
        ('conductor-show-missing-404', '/v1/conductors/no-such-conductor', L),
        ('conductor-show-case-variant', '/v1/conductors/%s' % q(
            plain[0].upper()) if plain else '/v1/conductors/X', L),
        ('conductors-list-sort-hostname-desc',
         '/v1/conductors?sort_key=hostname&sort_dir=desc', L),
        ('conductors-list-sort-alive-400', '/v1/conductors?sort_key=alive',
         L),
        ('conductor-show-v1.48-404', '/v1/conductors/%s' % q(plain[0])
         if plain else '/v1/conductors/x',
         {'X-OpenStack-Ironic-API-Version': '1.48'}),
        ('nodes-list-limit2', '/v1/nodes?limit=2', L),
        ('nodes-list-limit0-400', '/v1/nodes?limit=0', L),
        ('nodes-detail-limit1', '/v1/nodes/detail?limit=1', L),
        ('nodes-list-detailTrue-limit1', '/v1/nodes?detail=True&limit=1', L),
        ('nodes-list-fields-uuid-conductor-500',
         '/v1/nodes?fields=uuid,conductor&limit=2', L),
        ('nodes-list-conductor-filter', '/v1/nodes?conductor=%s' % q(busy), L),
        ('nodes-list-slash-conductor-filter',
         '/v1/nodes/?conductor=%s' % q(busy), L),
        ('nodes-list-conductor-filter-fields',
         '/v1/nodes?conductor=%s&fields=uuid,name' % q(busy), L),
        ('nodes-list-conductor-filter-limit3-quirk',
         '/v1/nodes?conductor=%s&limit=3' % q(busy), L),
        ('nodes-detail-conductor-filter',
         '/v1/nodes/detail?conductor=%s' % q(busy), L),
        ('nodes-list-conductor-filter-case-variant',
         '/v1/nodes?conductor=%s' % q(busy.upper()), L),
        ('nodes-list-conductor-filter-missing',
         '/v1/nodes?conductor=no-such-conductor', L),
        ('nodes-list-conductor-filter-v1.48-406',
         '/v1/nodes?conductor=%s' % q(busy),
         {'X-OpenStack-Ironic-API-Version': '1.48'}),
        ('node-show-with-conductor', '/v1/nodes/%s' % n1, L),
        ('node-show-without-conductor', '/v1/nodes/%s' % n0, L),
        ('node-show-by-name', '/v1/nodes/%s' % named[0]['name'] if named
         else '/v1/nodes/%s' % n1, L),
        ('node-show-fields-uuid-conductor',
         '/v1/nodes/%s?fields=uuid,conductor' % n1, L),
        ('node-show-fields-uuid-conductor-none',
         '/v1/nodes/%s?fields=uuid,conductor' % n0, L),
        ('node-conductor-subpath', '/v1/nodes/%s/conductor' % n1, L),
        ('node-conductor-subpath-none', '/v1/nodes/%s/conductor' % n0, L),
        ('node-conductor-subpath-v1.48', '/v1/nodes/%s/conductor' % n1,
         {'X-OpenStack-Ironic-API-Version': '1.48'}),
        ('node-show-v1.48-no-conductor-field', '/v1/nodes/%s' % n1,
         {'X-OpenStack-Ironic-API-Version': '1.48'}),
        ('node-show-missing-uuid-404',
         '/v1/nodes/00000000-0000-4000-8000-000000000000', L),
        ('node-show-missing-name-404', '/v1/nodes/no-such-node', L),
        ('node-show-badname-400', '/v1/nodes/bad%20name', L),
        ('node-conductor-subpath-missing-404',
         '/v1/nodes/no-such-node/conductor', L),
        ('unknown-path-404', '/v1/nope', L),
    ]
    index = []
    for name, path, hdrs in cases:
        h = dict(hdrs)
        h.setdefault('Accept', 'application/json')
        resp = _raw_request(base, path, h)
        if len(resp['body_text']) > 20000 and 'body_json' in resp:
            resp['body_text'] = ('(omitted: %d bytes, the JSON of body_json '
                                 'as the server wrote it)'
                                 % len(resp['body_text']))
        rec = {'request': {'method': 'GET', 'path': path, 'headers': h},
               'response': resp}
        with open(os.path.join(a.out, name + '.json'), 'w') as f:
            json.dump(rec, f, indent=1)
            f.write('\n')
        index.append('| %s | `GET %s` %s | %s |' % (
            name, path, ' '.join('`%s: %s`' % kv for kv in hdrs.items()),
            resp['status']))
        print('%-45s %s %s' % (name, resp['status'], path))
    with open(os.path.join(a.out, 'INDEX.md'), 'w') as f:
        f.write('# Captured responses of real Ironic %s\n\n' % a.label)
        f.write('Made by `ironic_fleet.py capture --ironic %s --out %s` '
                'against a fleet from `setup`. Each file: request (method, '
                'path, headers) and response (status, reason, headers in '
                'wire order and case, body text, parsed body). Hosts in '
                'links are the capture server\'s.\n\n' % (base, a.out))
        f.write('| file | request | status |\n|---|---|---|\n')
        f.write('\n'.join(index) + '\n')
    return 0


# --------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)

    s = sub.add_parser('setup', help='fresh DB + migrations + random fleet')
    s.add_argument('--db-url', required=True)
    s.add_argument('--seed', type=int, required=True)
    s.add_argument('--heartbeat-timeout', type=int, default=60)
    s.add_argument('--margin', type=int, default=10,
                   help='seconds between just_inside/just_outside heartbeats '
                        'and the timeout (also the compare time budget)')
    s.add_argument('--out')
    s.set_defaults(func=cmd_setup)

    s = sub.add_parser('heartbeat', help='re-stamp heartbeat ages to now')
    s.add_argument('--fleet', required=True)
    s.add_argument('--db-url', help='default: the fleet\'s db_url')
    s.set_defaults(func=cmd_heartbeat)

    s = sub.add_parser('dropdb', help='drop the database of --db-url')
    s.add_argument('--db-url', required=True)
    s.set_defaults(func=cmd_dropdb)

    s = sub.add_parser('serve', help="run Ironic's real API (foreground)")
    s.add_argument('--db-url', required=True)
    s.add_argument('--port', type=int, required=True)
    s.add_argument('--heartbeat-timeout', type=int, default=60)
    s.add_argument('--hash-partition-exponent', type=int, default=5)
    s.add_argument('--hash-ring-algorithm', default='md5')
    s.add_argument('--workers', type=int, default=2)
    s.add_argument('--hash-ring-reset-interval', type=int, default=1,
                   help='seconds Ironic caches its hash rings (Ironic '
                        'default 15; 0 rebuilds them for every node)')
    s.add_argument('--log-dir')
    s.add_argument('--debug', action='store_true')
    s.add_argument('--no-request-log', action='store_true')
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser('compare', help='compare sidecar with Ironic')
    s.add_argument('--ironic', required=True)
    s.add_argument('--sidecar', required=True)
    s.add_argument('--fleet')
    s.add_argument('--jobs', type=int, default=8,
                   help='concurrent requests')
    s.add_argument('--settle', type=float, default=3.0,
                   help='seconds to wait before refetching a mismatching '
                        'pair (sidecar cache refresh)')
    s.add_argument('--retries', type=int, default=2,
                   help='refetches of a pair whose only differences are '
                        'heartbeat-timing ones (alive, conductor, filter '
                        'membership); any other difference fails at once')
    s.add_argument('--accept', action='append', default=[],
                   metavar='NAME[,NAME]',
                   type=lambda v: [x for x in v.split(',') if x],
                   help='report these known differences from Ironic 21.4 '
                        'as NOTEs instead of failures: ' +
                        ', '.join(sorted(DIFFERENCES)))
    s.add_argument('--safety', type=float, default=1.0,
                   help='seconds kept between the end of phase A and the '
                        'first heartbeat crossing')
    s.add_argument('--hash-partition-exponent', type=int, default=5,
                   help='for the SQLite membership check (see README)')
    s.add_argument('--hash-ring-algorithm', default='md5',
                   help='for the SQLite membership check (see README)')
    s.add_argument('-v', '--verbose', action='store_true')
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser('capture', help='save real Ironic responses')
    s.add_argument('--ironic', required=True)
    s.add_argument('--out', default=os.path.join(HERE, 'captured'))
    s.add_argument('--label', default='21.4 (python3-ironic 21.4.4)')
    s.set_defaults(func=cmd_capture)

    s = sub.add_parser('cli', help='check the stock baremetal CLI')
    s.add_argument('--endpoint', required=True)
    s.add_argument('--fleet')
    s.add_argument('--truth', help='Ironic URL giving the expected answers '
                   '(default: the endpoint itself)')
    s.add_argument('--ironic-endpoint', action='store_true',
                   help='the endpoint is real Ironic 21.4: accept its known '
                        'failures (400 for host:port conductor show, 500 for '
                        'node list --fields ... conductor)')
    s.add_argument('--node-sample', type=int, default=8,
                   help='random nodes for `node show` (0 = all), plus a few '
                        'without conductor / with host:port conductor')
    s.add_argument('--conductor-sample', type=int, default=0,
                   help='conductors for `conductor show` and `node list '
                        '--conductor` (0 = all)')
    s.add_argument('--jobs', type=int, default=3,
                   help='CLI processes run at once')
    s.add_argument('--retries', type=int, default=1)
    s.add_argument('--settle', type=float, default=3.0)
    s.add_argument('--fresh-truth', action='store_true',
                   help='refetch the expected answers before every command')
    s.add_argument('-v', '--verbose', action='store_true')
    s.set_defaults(func=cmd_cli)

    a = p.parse_args(argv)
    return a.func(a) or 0


if __name__ == '__main__':
    sys.exit(main())
