"""Fleets written through Ironic's own DB API, per release: setup (fresh
database, Ironic's migrations or create_schema, a random fleet),
heartbeat (re-stamp the heartbeat ages), dropdb."""

import datetime
import json
import os
import random
import tempfile
import time
import uuid

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

# With --provision-states (the pgconf case: Ironic's concurrency limits),
# each node's provision state, as objects.Node.create would store it; the
# states the limits count (deploying, wait call-back; deleting, cleaning,
# clean wait) are frequent enough that small limits are reached.
PROVISION_STATES = ['enroll', 'manageable', 'available', 'active',
                    'deploying', 'wait call-back', 'deploy failed',
                    'deleting', 'cleaning', 'clean wait', 'clean failed']
PROVISION_WEIGHTS = [5, 10, 15, 25, 8, 8, 4, 4, 8, 8, 5]

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
                       hash_ring_reset_interval=0, debug=False,
                       conductor_options=()):
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
    ] + ['%s = %s' % kv for kv in conductor_options] + [
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


# --------------------------------------------------------------------------
# What changed between the Ironic releases the harness runs (16.0 ... newest)
# --------------------------------------------------------------------------

def ironic_release():
    """(major, minor) of the installed Ironic (the package's metadata)."""
    try:
        import importlib.metadata as md
        v = md.version('ironic')
    except Exception:  # noqa: BLE001  (metadata missing: pbr's record)
        from ironic import version
        v = version.version_info.release_string()
    major, minor = v.split('.')[:2]
    return int(major), int(minor)


def import_ironic_command():
    """Ironic's console-script package: ironic.cmd up to 2025.x, renamed
    ironic.command later. Importing it monkey-patches eventlet (where the
    release still uses eventlet) and sets up i18n, as the real scripts do."""
    try:
        import ironic.command as command
    except ImportError:
        import ironic.cmd as command
    return command


def _prepare(argv):
    """oslo.config + logging + objects, as an Ironic command does:
    prepare_command(argv) since 2023.x, prepare_service(argv) before (its
    signature later became prepare_service(name, argv))."""
    from ironic.common import service as ironic_service
    if hasattr(ironic_service, 'prepare_command'):
        ironic_service.prepare_command(argv)
    else:
        ironic_service.prepare_service(argv)


HISTORY_TYPES = ('provisioning', 'cleaning', 'monitoring', 'deploying', 'UNKNOWN')


def _write_history(dbapi, nodes, conductors, rng):
    """node_history (18.2+): events for about a third of the nodes, as
    conductor/utils.py node_history_record writes them (severity ERROR or
    INFO, the conductor's host, an event type, the text), through the
    release's own dbapi.create_node_history, with the version its object
    would store. Some name a conductor that is not registered. Their text
    carries a marker the sidecar must never show."""
    if not hasattr(dbapi, 'create_node_history'):
        return
    from ironic import objects
    version = getattr(objects, 'NodeHistory', None)
    extra = {'version': version.get_target_version()} if version else {}
    hosts = [c['hostname'] for c in conductors] + ['retired-conductor.example']
    for n in nodes:
        if rng.random() >= 0.35:
            continue
        for _ in range(rng.randint(1, 4)):
            dbapi.create_node_history({
                'node_id': n['id'], 'conductor': rng.choice(hosts),
                'severity': rng.choice(('ERROR', 'INFO')),
                'event_type': rng.choice(HISTORY_TYPES),
                'event': 'conformance event HISTORY-TEXT-NEVER-SHOWN',
                'user': 'conformance', **extra})


def _register_interfaces(dbapi, conductor_id, ifaces):
    """dbapi.register_conductor_hardware_interfaces: one call with every
    row (interfaces as dicts) since Ironic 18.x; up to 17.x one call per
    (hardware_type, interface_type) with the names and the default."""
    import inspect
    fn = dbapi.register_conductor_hardware_interfaces
    if len(inspect.signature(fn).parameters) <= 2:
        return fn(conductor_id, ifaces)
    by = {}
    for i in ifaces:
        key = (i['hardware_type'], i['interface_type'])
        by.setdefault(key, ([], []))
        by[key][0].append(i['interface_name'])
        if i['default']:
            by[key][1].append(i['interface_name'])
    for (ht, it), (names, default) in by.items():
        fn(conductor_id, ht, it, names, default[0])


def _init_ironic_conf(db_url, heartbeat_timeout):
    """Configure oslo.config for in-process use of Ironic's DB layer."""
    import_ironic_command()
    fd, path = tempfile.mkstemp(prefix='ironic-fleet-', suffix='.conf')
    os.close(fd)
    _write_ironic_conf(path, db_url, heartbeat_timeout)
    try:
        _prepare(['ironic-fleet', '--config-file', path])
    finally:
        os.unlink(path)
    import logging
    logging.getLogger('alembic').setLevel(logging.WARNING)


def _with_database(url, name):
    """url naming database `name` (URL.set since SQLAlchemy 1.4; the URL
    is mutable in 1.3, bullseye's)."""
    if hasattr(url, 'set'):
        return url.set(database=name)
    import copy
    u = copy.copy(url)
    u.database = name
    return u


def _recreate_database(db_url):
    """Drop and create the database named in db_url (generic over backends)."""
    _drop_database(db_url, create=True)


def _drop_database(db_url, create=False):
    """Drop the database named in db_url (a SQLite file: remove it), first
    ending the other sessions on it (PostgreSQL); create it again, empty,
    when create is set."""
    import sqlalchemy as sa
    from sqlalchemy.engine.url import make_url
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
        admin, quote = _with_database(url, 'postgres'), '"%s"'
        created = " ENCODING 'UTF8' TEMPLATE template0"
    elif backend in ('mysql', 'mariadb'):
        # (SQLAlchemy 1.4's URL.set(database=None) keeps the database)
        admin, quote = _with_database(url, 'mysql'), '`%s`'
        created = ' CHARACTER SET utf8mb4'
    else:
        raise SystemExit('unsupported backend %s' % backend)
    eng = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with eng.connect() as conn:
        if backend == 'postgresql':
            conn.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :d AND pid <> pg_backend_pid()'),
                {'d': dbname})
        conn.execute(sa.text('DROP DATABASE IF EXISTS ' + quote % dbname))
        if create:
            conn.execute(sa.text('CREATE DATABASE ' + quote % dbname + created))
    eng.dispose()


# --------------------------------------------------------------------------
# setup
# --------------------------------------------------------------------------

def _plan_fleet(seed, timeout, margin, max_nodes=0):
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
    if max_nodes:
        n_nodes = min(n_nodes, max_nodes)   # the rng's stream unchanged
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

    conductors, nodes = _plan_fleet(a.seed, a.heartbeat_timeout, a.margin,
                                    a.max_nodes)
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
    if getattr(a, 'provision_states', False):
        # Drawn from an RNG of their own, so that the rest of the seed's
        # fleet is the same with and without them.
        rng = random.Random(a.seed * 7919 + 1)
        for n in nodes:
            n['provision_state'] = rng.choices(
                PROVISION_STATES, weights=PROVISION_WEIGHTS)[0]
        # and some in maintenance with a fault of the release's own list,
        # as Ironic itself sets them (_power_failure_handling, ...)
        from ironic.common import faults as ironic_faults
        for n in nodes:
            if rng.random() < 0.15:
                n['fault'] = rng.choice(ironic_faults.VALID_FAULTS)
        # and, where the release has nodes.health (34.0+), a health for some
        from ironic.db.sqlalchemy import models
        if hasattr(models.Node, 'health'):
            for n in nodes:
                if rng.random() < 0.4:
                    n['health'] = rng.choice(['OK', 'Warning', 'Critical'])
    for n in nodes:
        # 'version' is what objects.Node.create() would store; without it
        # the API fails with 500 (objects.base: is_compatible(None, ...)).
        values = {'uuid': n['uuid'], 'driver': n['driver'],
                  'conductor_group': n['conductor_group'],
                  'version': objects.Node.get_target_version()}
        if n.get('provision_state'):
            values['provision_state'] = n['provision_state']
        if n.get('fault'):
            values['maintenance'] = True
            values['fault'] = n['fault']
        if n.get('health'):
            values['health'] = n['health']
        if n['name']:
            values['name'] = n['name']
        ref = dbapi.create_node(values)
        n['id'] = ref.id
    if getattr(a, 'provision_states', False):
        _write_history(dbapi, nodes, conductors, random.Random(a.seed * 7919 + 2))
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
            _register_interfaces(dbapi, ref.id, ifaces)
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
        'ironic_release': '%d.%d' % ironic_release(),
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
