"""capture: save real Ironic responses (status, headers, body) as files."""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from common import http_get

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
