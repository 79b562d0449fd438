"""The stock `baremetal` CLI against an endpoint, checked with Ironic's
answers."""

import json
import os
import random
import subprocess
import time

from common import (Checker, _deadline, _list_all_raw, _load_fleet, diff,
                    http_get)

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

    def node_conductors(nodes, rc, out, err):
        # a node listing's Conductor column against each node's conductor
        want = {u: n.get('conductor') for u, n in nodes.items()}
        got = parse(out) if rc == 0 else {'rc': rc, 'err': err[-500:]}
        if isinstance(got, list):
            got = {r.get('UUID'): r.get('Conductor') for r in got}
        return want, got

    def c_long_nodes(conds, nodes, rc, out, err):
        # `node list --long` reads /v1/nodes/detail and shows Conductor
        return node_conductors(nodes, rc, out, err)
    cases.append(('baremetal node list --long (Conductor column)',
                  ['node', 'list', '--long'], c_long_nodes))

    def c_fields_list(conds, nodes, rc, out, err):
        # Ironic 21.4 answers 500 to GET /v1/nodes/?fields=uuid,conductor
        if rc != 0 and a.ironic_endpoint and \
                "has no attribute 'conductor' (HTTP 500)" in err:
            return 'HTTP 500 (Ironic 21.4 bug)', 'HTTP 500 (Ironic 21.4 bug)'
        return node_conductors(nodes, rc, out, err)
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
        """The CLI's answer must be Ironic's answer fetched right before or
        right after it: a command takes seconds (more under load), and a
        heartbeat crossing heartbeat_timeout inside that window changes
        `alive` and the node mapping. Retried when it is neither."""
        what, argv, fn = case
        for attempt in range(a.retries + 1):
            cn, nd = _truth(truth_base) if attempt or a.fresh_truth else \
                (conds, nodes)
            rc, out, err, _cmd = _baremetal(ep, argv + ['-f', 'json'])
            want, got = fn(cn, nd, rc, out, err)
            if want == got:
                return what, attempt, None
            if a.truth:
                # Ironic fetched again, after the command
                after, after_nd = _truth(truth_base)
                want2, got2 = fn(after, after_nd, rc, out, err)
                if want2 == got2:
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
