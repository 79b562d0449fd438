#!/usr/bin/python3
"""The sidecar's authentication and read policy against real Ironic 21.4.

One fleet (conformance/ironic_fleet.py setup) on PostgreSQL; a real Keystone
(Debian keystone, its WSGI app under wsgiref) on its own PostgreSQL
database; Ironic's API twice on the fleet (auth_strategy = keystone, then
http_basic) and the sidecar with the same ironic.conf each time. Every user
asks every endpoint of both; the status and the set of nodes (and their
reservation field) or conductors must agree. The sidecar runs with two
doors: /metrics on --web.listen-address with TLS and basic auth from
--web.config.file (a Prometheus-style scrape), the JSON API on
--api.listen-address with TLS from --api.config-file under the
auth_strategy (the stock CLI with a Keystone token, and with http_basic);
anonymous clients get neither. Prints the matrix and "N passed, M failed".

Usage: auth_conformance.py SIDECAR_BINARY
"""
import base64, json, os, signal, socket, ssl, subprocess, sys, tempfile, time
import urllib.request, urllib.error

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(HERE, '..', 'ironic_fleet.py')
PY = '/usr/bin/python3'
PG = os.environ.get('PGURL', 'postgresql+psycopg2://postgres@127.0.0.1')
TAG = '%d' % os.getpid()
WORK = tempfile.mkdtemp(prefix='auth-conformance-')
PROCS, DBS = [], []
PASS, FAIL, MATRIX = [0], [0], []
# The sidecar's TLS: a self-signed certificate for 127.0.0.1 (tls_setup).
CA, CTX = None, None
# Prometheus' user on the metrics door.
PROM_USER, PROM_PW = 'prometheus', 'scrapepw'


def port():
    s = socket.socket(); s.bind(('127.0.0.1', 0)); p = s.getsockname()[1]; s.close(); return p


def start(args, log, **kw):
    p = subprocess.Popen(args, stdout=open(log, 'w'), stderr=subprocess.STDOUT, start_new_session=True, **kw)
    PROCS.append(p)
    return p


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL); p.wait()


def req(base, path, headers=None, method='GET', body=None):
    h = {'Accept': 'application/json', 'X-OpenStack-Ironic-API-Version': 'latest'}
    h.update(headers or {})
    data = json.dumps(body).encode() if body is not None else None
    if data:
        h['Content-Type'] = 'application/json'
    r = urllib.request.Request(base + path, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(r, timeout=60, context=CTX if base.startswith('https:') else None) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def wait(url, p, tries=120):
    for _ in range(tries):
        if p.poll() is not None:
            raise SystemExit('process for %s exited; see logs in %s' % (url, WORK))
        try:
            urllib.request.urlopen(url, timeout=2); return
        except urllib.error.HTTPError:
            return
        except Exception:
            time.sleep(0.5)
    raise SystemExit('%s never answered' % url)


def psql(db, sql):
    return subprocess.run(['psql', '-h', '127.0.0.1', '-U', 'postgres', '-d', db, '-Atqc', sql],
                          check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- keystone
def keystone_conf(path, db, expiration=3600):
    with open(path, 'w') as f:
        f.write('[DEFAULT]\nuse_stderr = true\n[database]\nconnection = %s/%s\n'
                '[token]\nprovider = fernet\nexpiration = %d\n'
                '[fernet_tokens]\nkey_repository = %s/fernet\n'
                '[fernet_receipts]\nkey_repository = %s/fernet-receipts\n'
                '[credential]\nkey_repository = %s/credential\n' % (PG, db, expiration, WORK, WORK, WORK))


def keystone():
    db = 'keystone_auth_%s' % TAG
    psql('postgres', 'CREATE DATABASE %s' % db); DBS.append(db)
    conf = os.path.join(WORK, 'keystone.conf'); keystone_conf(conf, db)
    km = ['keystone-manage', '--config-file', conf]
    subprocess.run(km + ['db_sync'], check=True, capture_output=True)
    for what in ('fernet_setup', 'credential_setup'):
        subprocess.run(km + [what, '--keystone-user', 'root', '--keystone-group', 'root'], check=True, capture_output=True)
    kp = port(); url = 'http://127.0.0.1:%d/v3' % kp
    subprocess.run(km + ['bootstrap', '--bootstrap-password', 'adminpw', '--bootstrap-public-url', url,
                         '--bootstrap-internal-url', url, '--bootstrap-admin-url', url,
                         '--bootstrap-region-id', 'RegionOne'], check=True, capture_output=True)
    p = start(['keystone-wsgi-public', '--host', '127.0.0.1', '--port', str(kp), '--', '--config-file', conf],
              os.path.join(WORK, 'keystone.log'))
    wait(url, p)
    # An expired token: the same keys, a Keystone whose tokens live 1s.
    conf2 = os.path.join(WORK, 'keystone-short.conf'); keystone_conf(conf2, db, expiration=1)
    kp2 = port()
    p2 = start(['keystone-wsgi-public', '--host', '127.0.0.1', '--port', str(kp2), '--', '--config-file', conf2],
               os.path.join(WORK, 'keystone-short.log'))
    wait('http://127.0.0.1:%d/v3' % kp2, p2)
    return url, p, 'http://127.0.0.1:%d/v3' % kp2, p2


def token(url, user, pw, scope):
    auth = {'identity': {'methods': ['password'], 'password': {'user': {
        'name': user, 'password': pw, 'domain': {'id': 'default'}}}}}
    if scope == 'system':
        auth['scope'] = {'system': {'all': True}}
    elif scope:
        auth['scope'] = {'project': {'name': scope, 'domain': {'id': 'default'}}}
    st, h, b = req(url, '/auth/tokens', method='POST', body={'auth': auth})
    if st != 201:
        raise SystemExit('token for %s: %d %s' % (user, st, b[:300]))
    return h['X-Subject-Token']


def identity(url):
    adm = token(url, 'admin', 'adminpw', 'system')
    H = {'X-Auth-Token': adm}

    def post(path, key, body):
        st, _, b = req(url, path, H, 'POST', {key: body})
        if st not in (200, 201):
            raise SystemExit('POST %s: %d %s' % (path, st, b[:300]))
        return json.loads(b)[key]['id']

    def role(name):
        _, _, b = req(url, '/roles?name=' + name, H)
        r = json.loads(b)['roles']
        return r[0]['id'] if r else post('/roles', 'role', {'name': name})
    proj = {n: post('/projects', 'project', {'name': n, 'domain_id': 'default'})
            for n in ('owners', 'lessees', 'service')}
    users = {n: post('/users', 'user', {'name': n, 'password': n + 'pw', 'domain_id': 'default'})
             for n in ('sysreader', 'owner', 'lessee', 'norole', 'ironic')}
    grants = [('/system/users/%s/roles/%s', users['sysreader'], role('reader')),
              ('/projects/%s/users/%%s/roles/%%s' % proj['owners'], users['owner'], role('member')),
              ('/projects/%s/users/%%s/roles/%%s' % proj['lessees'], users['lessee'], role('member')),
              ('/projects/%s/users/%%s/roles/%%s' % proj['service'], users['ironic'], role('admin')),
              ('/projects/%s/users/%%s/roles/%%s' % proj['service'], users['ironic'], role('service'))]
    for path, u, r in grants:
        st, _, b = req(url, path % (u, r), H, 'PUT')
        if st != 204:
            raise SystemExit('grant %s: %d %s' % (path, st, b[:200]))
    return proj


# ---------------------------------------------------------------- ironic
def ironic_conf(path, db_url, api_port, strategy, extra):
    with open(path, 'w') as f:
        f.write('[DEFAULT]\nauth_strategy = %s\nrpc_transport = json-rpc\nhost = auth-conformance\n'
                'use_stderr = true\n%s\n[api]\nhost_ip = 127.0.0.1\nport = %d\napi_workers = 1\n'
                '[conductor]\nheartbeat_timeout = 60\n[database]\nconnection = %s\n'
                '[json_rpc]\nauth_strategy = noauth\n%s' % (
                    strategy, extra.get('DEFAULT', ''), api_port, db_url, extra.get('rest', '')))


def serve_ironic(conf, api_port, name):
    code = 'import sys, ironic.cmd; from ironic.cmd import api; sys.argv=["ironic-api","--config-file",%r]; api.main()' % conf
    p = start([PY, '-c', code], os.path.join(WORK, name + '.log'))
    wait('http://127.0.0.1:%d/' % api_port, p)
    return p


def tls_setup():
    """A self-signed certificate for 127.0.0.1, the metrics door's web
    config (TLS, Prometheus' bcrypt user) and the API door's (TLS only)."""
    global CA, CTX
    import bcrypt
    CA = os.path.join(WORK, 'tls.crt')
    key = os.path.join(WORK, 'tls.key')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
                    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', CA], check=True, capture_output=True)
    CTX = ssl.create_default_context(cafile=CA)
    tls = 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' % (CA, key)
    web, api = os.path.join(WORK, 'web.yml'), os.path.join(WORK, 'api.yml')
    with open(web, 'w') as f:
        f.write(tls + 'basic_auth_users:\n  %s: %s\n' % (
            PROM_USER, bcrypt.hashpw(PROM_PW.encode(), bcrypt.gensalt(4)).decode()))
    with open(api, 'w') as f:
        f.write(tls)
    return web, api


def serve_sidecar(binary, conf, name, web, api):
    """The sidecar's two doors: returns the API's URL, the metrics door's
    URL and the process."""
    mp, ap = port(), port()
    p = start([binary, '--ironic.config-file', conf, '--web.listen-address', '127.0.0.1:%d' % mp,
               '--web.config.file', web, '--api.listen-address', '127.0.0.1:%d' % ap, '--api.config-file', api,
               '--refresh.min-interval', '0s'], os.path.join(WORK, name + '.log'))
    wait_tls('https://127.0.0.1:%d/healthz' % ap, p)
    return 'https://127.0.0.1:%d' % ap, 'https://127.0.0.1:%d' % mp, p


def wait_tls(url, p, tries=120):
    for _ in range(tries):
        if p.poll() is not None:
            raise SystemExit('%s exited %d' % (url, p.returncode))
        try:
            urllib.request.urlopen(url, timeout=2, context=CTX)
            return
        except Exception:
            time.sleep(0.5)
    raise SystemExit('%s did not come up' % url)


def check(mode, who, what, want, got):
    ok = want == got
    (PASS if ok else FAIL)[0] += 1
    MATRIX.append((mode, who, what, str(want), str(got), 'ok' if ok else 'FAIL'))
    if not ok:
        print('FAIL %s %s %s: want %s, got %s' % (mode, who, what, want, got))


def doors(mode, api, metrics, api_headers):
    """Each door's lock: Prometheus scrapes the metrics door with TLS and
    basic auth, anonymous and API credentials get 401 there; the API door
    does not serve /metrics."""
    b64 = lambda s: 'Basic ' + base64.b64encode(s.encode()).decode()
    st, _, body = req(metrics, '/metrics', {'Authorization': b64('%s:%s' % (PROM_USER, PROM_PW)), 'Accept': 'text/plain'})
    check(mode, 'prometheus (TLS, basic auth)', 'metrics door /metrics', '200 ironic_up 1',
          '%d ironic_up %s' % (st, '1' if b'\nironic_up 1' in body else '?'))
    check(mode, 'anonymous', 'metrics door /metrics', 401, req(metrics, '/metrics', {'Accept': 'text/plain'})[0])
    check(mode, 'API credentials', 'metrics door /v1/nodes', 401, req(metrics, '/v1/nodes', api_headers)[0])
    check(mode, 'anonymous', 'API door /v1/nodes', 401, req(api, '/v1/nodes')[0])
    check(mode, 'API credentials', 'API door /metrics', 404, req(api, '/metrics', api_headers)[0])
    try:
        urllib.request.urlopen(metrics.replace('https:', 'http:') + '/metrics', timeout=5)
        plain = 'answered'
    except Exception:
        plain = 'refused'
    check(mode, 'anonymous, plain HTTP', 'metrics door /metrics', 'refused', plain)


def refused_one_door(binary, conf, web):
    """On one door, web-config basic auth with keystone cannot work: the
    sidecar refuses to start and says why."""
    r = subprocess.run([binary, '--ironic.config-file', conf, '--web.listen-address', '127.0.0.1:%d' % port(),
                        '--web.config.file', web], capture_output=True, text=True, timeout=60)
    check('keystone', '-', 'one door, web basic auth + keystone', 'exit 1, --api.listen-address named',
          'exit %d%s' % (r.returncode, ', --api.listen-address named' if '--api.listen-address' in r.stderr else ''))


def summary(path, st, body):
    """What is compared: the status and the set of nodes (with their
    reservation) or conductors."""
    if st != 200:
        return st, None
    d = json.loads(body)
    if 'nodes' in d:
        return st, sorted(((n.get('uuid'), n.get('reservation', '-')) for n in d['nodes']), key=str)
    if 'conductors' in d:
        return st, sorted(c['hostname'] for c in d['conductors'])
    if 'uuid' in d:
        return st, [(d['uuid'], d.get('reservation', '-'))]
    if 'hostname' in d:
        return st, [d['hostname']]
    return st, 'ok'


def compare(mode, user, ironic, sidecar, path, headers):
    i = summary(path, *req_s(ironic, path, headers))
    s = summary(path, *req_s(sidecar, path, headers))
    ok = i == s
    (PASS if ok else FAIL)[0] += 1
    show = lambda v: '%d%s' % (v[0], '' if v[1] in (None, 'ok') else ' (%d)' % len(v[1]))
    MATRIX.append((mode, user, path, show(i), show(s), 'ok' if ok else 'FAIL'))
    if not ok:
        print('FAIL %s %s %s\n  ironic:  %s\n  sidecar: %s' % (mode, user, path, i, s))


def req_s(base, path, headers):
    st, _, b = req(base, path, headers)
    return st, b


def main():
    binary = os.path.abspath(sys.argv[1])
    db = 'ironic_auth_%s' % TAG
    db_url = '%s/%s' % (PG, db)
    fleet = os.path.join(WORK, 'fleet.json')
    subprocess.run([PY, FLEET, 'setup', '--db-url', db_url, '--seed', '7', '--out', fleet], check=True,
                   capture_output=True)
    DBS.append(db)
    uuids = psql(db, 'SELECT uuid FROM nodes ORDER BY id').split()
    # Ironic 21.4 answers 400 to a host:port name in the path (24.0+ accepts it).
    hosts = [h for h in psql(db, 'SELECT hostname FROM conductors ORDER BY id').split() if ':' not in h]
    ks_url, ks, short_url, short = keystone()
    proj = identity(ks_url)
    # A third of the nodes owned by "owners", some of them and others leased
    # to "lessees"; the rest belong to nobody.
    n = len(uuids)
    owned, leased = uuids[:n // 3], uuids[n // 4:n // 2]
    for u in owned:
        psql(db, "UPDATE nodes SET owner = '%s', reservation = 'auth-lock' WHERE uuid = '%s'" % (proj['owners'], u))
    for u in leased:
        psql(db, "UPDATE nodes SET lessee = '%s' WHERE uuid = '%s'" % (proj['lessees'], u))
    other = [u for u in uuids if u not in owned and u not in leased]

    expired = token(short_url, 'owner', 'ownerpw', 'owners')
    stop(short)
    toks = {'system-reader': token(ks_url, 'sysreader', 'sysreaderpw', 'system'),
            'project-owner': token(ks_url, 'owner', 'ownerpw', 'owners'),
            'lessee': token(ks_url, 'lessee', 'lesseepw', 'lessees'),
            'no-role (unscoped)': token(ks_url, 'norole', 'norolepw', None),
            'expired': expired, 'invalid': 'gAAAAinvalid-token', 'no token': None}
    time.sleep(2)  # the expired token's second is over
    paths = ['/', '/v1', '/v1/nodes', '/v1/nodes/detail', '/v1/nodes/' + owned[0], '/v1/nodes/' + leased[-1],
             '/v1/nodes/' + other[0], '/v1/conductors', '/v1/conductors/' + hosts[0]]

    ka = port()
    kconf = os.path.join(WORK, 'ironic-keystone.conf')
    ironic_conf(kconf, db_url, ka, 'keystone', {'rest': (
        '[keystone_authtoken]\nauth_type = password\nauth_url = %s\nwww_authenticate_uri = %s\n'
        'username = ironic\npassword = ironicpw\nuser_domain_name = Default\nproject_name = service\n'
        'project_domain_name = Default\n' % (ks_url, ks_url))})
    ironic = serve_ironic(kconf, ka, 'ironic-keystone')
    web, api = tls_setup()
    refused_one_door(binary, kconf, web)
    side, metrics, sidep = serve_sidecar(binary, kconf, 'sidecar-keystone', web, api)
    doors('keystone', side, metrics, {'X-Auth-Token': toks['system-reader']})
    ib = 'http://127.0.0.1:%d' % ka
    for user, t in toks.items():
        for p in paths:
            compare('keystone', user, ib, side, p, {'X-Auth-Token': t} if t else {})
    # The stock CLI: a token from Keystone, the sidecar as endpoint.
    # The standalone baremetal CLI takes Keystone credentials from
    # clouds.yaml (--os-cloud) and the endpoint from Keystone's catalog: the
    # sidecar registered as the baremetal service.
    H = {'X-Auth-Token': token(ks_url, 'admin', 'adminpw', 'system')}
    _, _, b = req(ks_url, '/services', H, 'POST', {'service': {'type': 'baremetal', 'name': 'ironic'}})
    sid = json.loads(b)['service']['id']
    for iface in ('public', 'internal'):
        req(ks_url, '/endpoints', H, 'POST', {'endpoint': {'service_id': sid, 'interface': iface,
                                                          'url': side, 'region_id': 'RegionOne'}})
    clouds = os.path.join(WORK, 'clouds.yaml')
    with open(clouds, 'w') as f:
        json.dump({'clouds': {'owner': {'auth_type': 'password', 'cacert': CA, 'auth': {
            'auth_url': ks_url, 'username': 'owner', 'password': 'ownerpw', 'project_name': 'owners',
            'user_domain_name': 'Default', 'project_domain_name': 'Default'}}}}, f)
    cli = ['baremetal', '--os-cloud', 'owner', '--os-baremetal-api-version', '1.49', 'node', 'list', '-f', 'json']
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=clouds)
    r = subprocess.run(cli, capture_output=True, text=True, env=env)
    got = sorted(x['UUID'] for x in json.loads(r.stdout)) if r.returncode == 0 else r.stderr[-300:]
    want = sorted(owned)
    ok = got == want
    (PASS if ok else FAIL)[0] += 1
    MATRIX.append(('keystone', 'project-owner', 'baremetal node list (CLI)', '-', 'rc %d, %d nodes' % (
        r.returncode, len(got) if isinstance(got, list) else -1), 'ok' if ok else 'FAIL'))
    if not ok:
        print('FAIL cli: want %d nodes, got %s' % (len(want), got if not isinstance(got, list) else len(got)))
    # Keystone down: a token neither has cached is a 503 in both.
    stop(ks)
    compare('keystone', 'keystone down', ib, side, '/v1/nodes', {'X-Auth-Token': 'gAAAAnever-seen'})
    stop(ironic); stop(sidep)

    # http_basic
    import bcrypt
    htpasswd = os.path.join(WORK, 'htpasswd')
    with open(htpasswd, 'w') as f:
        f.write('alice:%s\n' % bcrypt.hashpw(b'alicepw', bcrypt.gensalt(4)).decode())
    ba = port()
    bconf = os.path.join(WORK, 'ironic-basic.conf')
    ironic_conf(bconf, db_url, ba, 'http_basic', {'DEFAULT': 'http_basic_auth_user_file = %s' % htpasswd})
    ironic = serve_ironic(bconf, ba, 'ironic-basic')
    side, metrics, sidep = serve_sidecar(binary, bconf, 'sidecar-basic', web, api)
    ib = 'http://127.0.0.1:%d' % ba
    b64 = lambda s: 'Basic ' + base64.b64encode(s.encode()).decode()
    doors('http_basic', side, metrics, {'Authorization': b64('alice:alicepw')})
    # The stock CLI with http_basic on the API's door.
    cli = ['baremetal', '--os-auth-type', 'http_basic', '--os-username', 'alice', '--os-password', 'alicepw',
           '--os-endpoint', side, '--os-cacert', CA, '--os-baremetal-api-version', '1.49', 'node', 'list', '-f', 'json']
    r = subprocess.run(cli, capture_output=True, text=True)
    got = len(json.loads(r.stdout)) if r.returncode == 0 else r.stderr[-300:]
    check('http_basic', 'alice', 'baremetal node list (CLI)', len(uuids), got)
    basic = {'alice': b64('alice:alicepw'), 'wrong password': b64('alice:nope'), 'unknown user': b64('bob:x'),
             'no header': None, 'bearer': 'Bearer abc', 'garbage': 'Basic !!!'}
    for user, hv in basic.items():
        for p in paths:
            compare('http_basic', user, ib, side, p, {'Authorization': hv} if hv else {})
    stop(ironic); stop(sidep)

    print('\n| mode | user | endpoint | Ironic | sidecar | |\n|---|---|---|---|---|---|')
    for row in MATRIX:
        print('| ' + ' | '.join(row) + ' |')
    print('%d passed, %d failed' % (PASS[0], FAIL[0]))
    return 1 if FAIL[0] else 0


if __name__ == '__main__':
    rc = 1
    try:
        rc = main()
    finally:
        for p in PROCS:
            stop(p)
        for d in DBS:
            subprocess.run(['psql', '-h', '127.0.0.1', '-U', 'postgres', '-qc', 'DROP DATABASE IF EXISTS %s' % d],
                           capture_output=True)
        if os.environ.get('KEEP') != '1':
            subprocess.run(['rm', '-rf', WORK])
        else:
            print('kept', WORK)
    sys.exit(rc)
