#!/usr/bin/python3
"""make bench's openstack section: what operators use today, set up for real.

openstack-exporter reads Ironic and Nova through their APIs, behind
Keystone. This sets up the OpenStack it scrapes, on the bench's fleet:
a real Keystone (Debian keystone, on PostgreSQL), the catalog naming the
real Ironic API (the host's python3-ironic, auth_strategy = keystone) and
the real Nova API (scripts/bench-nova-api.py in the Nova chroot), and the
clouds.yaml openstack-exporter reads. scripts/bench.sh starts the services
(so that its cleanup owns their process groups) and measures.

Subcommands:
  keystone --db DB --dir DIR --port PORT   keystone.conf, database, keys,
                                           bootstrap (admin / adminpw)
  register --keystone URL --baremetal URL --compute URL --clouds FILE
                                           service project and users,
                                           endpoints, clouds.yaml
  ironic-conf --conf FILE --db-url URL --port PORT --keystone URL
  ironic --conf FILE                       runs Ironic's API (foreground)
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

PG = 'postgresql+psycopg2://postgres@127.0.0.1'
ADMIN_PW = 'adminpw'
# The services' own users (keystonemiddleware's validating users), as
# Kolla-Ansible and the install guides make them: admin in project service.
SERVICE_USERS = {'ironic': 'ironicpw', 'nova': 'novapw'}


def psql(db, sql):
    subprocess.run(['psql', '-q', '-h', '127.0.0.1', '-U', 'postgres', '-d', db, '-c', sql],
                   check=True, capture_output=True)


def keystone(a):
    os.makedirs(a.dir, exist_ok=True)
    conf = os.path.join(a.dir, 'keystone.conf')
    with open(conf, 'w') as f:
        f.write('[DEFAULT]\nuse_stderr = true\n[database]\nconnection = %s/%s\n'
                '[token]\nprovider = fernet\nexpiration = 86400\n'
                '[fernet_tokens]\nkey_repository = %s/fernet\n'
                '[fernet_receipts]\nkey_repository = %s/fernet-receipts\n'
                '[credential]\nkey_repository = %s/credential\n' % (PG, a.db, a.dir, a.dir, a.dir))
    psql('postgres', 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % a.db)
    psql('postgres', 'CREATE DATABASE %s' % a.db)
    km = ['keystone-manage', '--config-file', conf]
    url = 'http://127.0.0.1:%d/v3' % a.port
    for args in (['db_sync'],
                 ['fernet_setup', '--keystone-user', 'root', '--keystone-group', 'root'],
                 ['credential_setup', '--keystone-user', 'root', '--keystone-group', 'root'],
                 ['bootstrap', '--bootstrap-password', ADMIN_PW, '--bootstrap-public-url', url,
                  '--bootstrap-internal-url', url, '--bootstrap-admin-url', url,
                  '--bootstrap-region-id', 'RegionOne']):
        r = subprocess.run(km + args, capture_output=True, text=True)
        if r.returncode:
            sys.exit('keystone-manage %s failed:\n%s' % (args[0], r.stderr[-2000:]))


def call(url, path, method='GET', body=None, token=None):
    h = {'Accept': 'application/json', 'Content-Type': 'application/json'}
    if token:
        h['X-Auth-Token'] = token
    r = urllib.request.Request(url + path, method=method, headers=h,
                               data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            raw = resp.read()
            return resp.headers, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        sys.exit('%s %s: %d %s' % (method, path, e.code, e.read()[:500]))


def register(a):
    auth = {'identity': {'methods': ['password'], 'password': {'user': {
        'name': 'admin', 'password': ADMIN_PW, 'domain': {'id': 'default'}}}},
        'scope': {'project': {'name': 'admin', 'domain': {'id': 'default'}}}}
    h, _ = call(a.keystone, '/auth/tokens', 'POST', {'auth': auth})
    tok = h['X-Subject-Token']

    def create(path, key, body):
        return call(a.keystone, path, 'POST', {key: body}, tok)[1][key]['id']

    def find_or_create(path, key, body):
        # keystone-manage bootstrap makes the admin role, and since Keystone
        # 22 the service project too
        found = call(a.keystone, '%s?name=%s' % (path, body['name']), token=tok)[1][key + 's']
        return found[0]['id'] if found else create(path, key, body)

    admin = find_or_create('/roles', 'role', {'name': 'admin'})
    project = find_or_create('/projects', 'project', {'name': 'service', 'domain_id': 'default'})
    for name, pw in SERVICE_USERS.items():
        uid = create('/users', 'user', {'name': name, 'password': pw, 'domain_id': 'default'})
        call(a.keystone, '/projects/%s/users/%s/roles/%s' % (project, uid, admin), 'PUT', token=tok)
    for kind, name, url in (('baremetal', 'ironic', a.baremetal), ('compute', 'nova', a.compute)):
        sid = create('/services', 'service', {'type': kind, 'name': name})
        for iface in ('public', 'internal', 'admin'):
            create('/endpoints', 'endpoint', {'service_id': sid, 'interface': iface, 'url': url,
                                              'region_id': 'RegionOne'})
    # openstack-exporter's cloud: the admin of bootstrap, as its README's
    # example clouds.yaml has it.
    with open(a.clouds, 'w') as f:
        f.write('clouds:\n  bench:\n    region_name: RegionOne\n    identity_api_version: 3\n'
                '    auth:\n      auth_url: %s\n      username: admin\n      password: %s\n'
                '      project_name: admin\n      user_domain_name: Default\n'
                '      project_domain_name: Default\n' % (a.keystone, ADMIN_PW))


def ironic_conf(a):
    # Ironic's defaults where they matter (as the bench's ironic section):
    # two API workers (the cores), the ring cached 15 s.
    with open(a.conf, 'w') as f:
        f.write('[DEFAULT]\nauth_strategy = keystone\nrpc_transport = json-rpc\nhost = bench\n'
                'use_stderr = true\nhash_ring_reset_interval = 15\n'
                '[api]\nhost_ip = 127.0.0.1\nport = %d\napi_workers = 2\n'
                '[conductor]\nheartbeat_timeout = 60\n[database]\nconnection = %s\n'
                '[json_rpc]\nauth_strategy = noauth\n'
                '[keystone_authtoken]\nauth_type = password\nauth_url = %s\nwww_authenticate_uri = %s\n'
                'username = ironic\npassword = %s\nuser_domain_name = Default\nproject_name = service\n'
                'project_domain_name = Default\n' % (a.port, a.db_url, a.keystone, a.keystone,
                                                     SERVICE_USERS['ironic']))


def ironic(a):
    # ironic-api's console script: its package sets up eventlet as the
    # real service does.
    from ironic.cmd import api
    sys.argv = ['ironic-api', '--config-file', a.conf]
    return api.main()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('keystone')
    s.add_argument('--db', required=True)
    s.add_argument('--dir', required=True)
    s.add_argument('--port', type=int, required=True)
    s.set_defaults(func=keystone)
    s = sub.add_parser('register')
    for k in ('--keystone', '--baremetal', '--compute', '--clouds'):
        s.add_argument(k, required=True)
    s.set_defaults(func=register)
    s = sub.add_parser('ironic-conf')
    s.add_argument('--conf', required=True)
    s.add_argument('--db-url', required=True)
    s.add_argument('--port', type=int, required=True)
    s.add_argument('--keystone', required=True)
    s.set_defaults(func=ironic_conf)
    s = sub.add_parser('ironic')
    s.add_argument('--conf', required=True)
    s.set_defaults(func=ironic)
    a = p.parse_args()
    return a.func(a) or 0


if __name__ == '__main__':
    sys.exit(main())
