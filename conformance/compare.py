"""The comparison of the sidecar's JSON API with Ironic's, as a table of
cases (CASES)."""

import json
import time
import urllib.error
import urllib.parse
import urllib.request

from common import (Checker, LOCAL_NETLOCS, NO_VERSION, _deadline,
                    _list_all_raw, _load_fleet, diff, http_get,
                    link_paths)

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
    'request-id': 'the sidecar\'s Openstack-Request-Id header differs from '
                  'Ironic\'s',
    'version-headers': 'version headers on responses where Ironic sends '
                       'none (other than GET /)',
    'node-conductor-below-1.49': 'GET /v1/nodes/{uuid}/conductor below 1.49:'
                                 ' Ironic 406, the sidecar 404',
    'conductor-filter-limit': 'GET /v1/nodes?conductor=X&limit=N: Ironic '
                              'filters the page cut to N, the sidecar before '
                              'paging',
    # Ironic before 16.1 only (WSME types; run.sh accepts them for 16.0):
    'key-order': 'JSON key order: before 16.1 Ironic serialized WSME types '
                 '(their attribute order); 16.1 made conductors and nodes '
                 'plain dicts (commits 3c128467a, fc4793960), the order the '
                 'sidecar writes',
    'node-ident-error': 'GET /v1/nodes/{bad name}: before 16.1 "Expected a '
                        'logical name or UUID but received ..." (WSME); 16.1+ '
                        '"Expected UUID or name for node: ..." (fc4793960)',
    'root-description': 'GET / description: "... which aims to provision '
                        'baremetal machines." before 19.0 (8e8c1b087)',
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
                                names[1], ks), difference='key-order')]
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


def _tag(problems, difference):
    """problems, untagged ones named `difference` (when not None)."""
    for p in problems:
        if difference and p.difference is None:
            p.difference = difference
    return problems


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
            common, [k for k in s if k in i]), difference='key-order'))
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
    # one problem per kind of difference (so that an accepted one, e.g.
    # key-order, neither hides nor blocks the retry of a volatile one)
    for kind in sorted({x.difference for q in bad for x in q}, key=str):
        sub = [[x for x in q if x.difference == kind] for q in bad]
        sub = [q for q in sub if q]
        lines = [x.text for q in sub[:2] for x in q]
        p.append(Problem('%d of %d nodes differ%s; first:\n%s' % (
            len(sub), len(li), ' (%s)' % kind if kind else '',
            '\n'.join(lines)), all(x.volatile for q in sub for x in q),
            kind))
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
            p.append(Problem('%s: Ironic %r, sidecar %r' % (
                k, i.get(k), s.get(k)), difference='root-description'
                if k == 'description' else None))
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


class Context(object):
    """What every case of CASES reads: the two servers (P fetches a pair),
    the negotiated versions (g), Ironic's phase-A answers (the topology),
    the Checker, judge() and the task list the cases append to."""

    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.tasks = []

    def task(self, what, fetch, check):
        """A task of one judged pair."""
        self.tasks.append(lambda: [self.judge(what, fetch, check)])

    def get(self, path, headers=None):
        """A fetch of path from both servers."""
        return lambda: self.P.get(path, headers)

    @staticmethod
    def both(*checks):
        """A check made of several checks."""
        return lambda r: [p for c in checks for p in c(r)]


# --------------------------------------------------------------------------
# Phase B, the table of cases: each case(c) appends tasks to c.tasks (a
# task returns a list of Verdicts); they run concurrently, recorded in order.
# --------------------------------------------------------------------------

def case_version_documents(c):
    """Version documents and headers."""
    g, v1_notes, task, get, both = c.g, c.v1_notes, c.task, c.get, c.both
    task('GET / (version discovery)', get('/'),
         both(lambda r: root_problems(r[0], r[1], g),
              lambda r: header_problems(r[0], r[1], g, allow_extra=True)))
    for path in ('/v1', '/v1/'):
        task('GET %s (v1 document, headers)' % path, get(path),
             both(lambda r: v1_problems(r[0], r[1], g, v1_notes),
                  lambda r: header_problems(r[0], r[1], g)))


def case_request_ids(c):
    """Openstack-Request-Id: Ironic sends one on most responses."""
    P, task = c.P, c.task

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


def case_no_version_header(c):
    """No version header: Ironic answers as its minimum (why every other
    request carries an explicit version), the sidecar as its maximum."""
    (g, I, S, same, req_pool, judge, ri0, tasks, task) = (
        c.g, c.I, c.S, c.same, c.req_pool, c.judge, c.ri0, c.tasks, c.task)

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


def case_conductor_lists(c):
    """Conductor lists (alive volatile)."""
    g, task, get = c.g, c.task, c.get
    for path in ('/v1/conductors', '/v1/conductors/',
                 '/v1/conductors?limit=2',
                 '/v1/conductors?detail=True&limit=2',
                 '/v1/conductors?fields=hostname,alive',
                 '/v1/conductors?sort_key=hostname&sort_dir=desc'):
        task('GET %s' % path, get(path),
             lambda r: resp_problems(r[0], r[1], volatile=('alive',)))
    task('GET /v1/conductors headers', get('/v1/conductors'),
         lambda r: header_problems(r[0], r[1], g))


def case_errors_and_versions(c):
    """Errors and versions: status, body and headers exactly."""
    (g, served, some, busy, plain, v148, q, task, get, both) = (
        c.g, c.served, c.some, c.busy, c.plain, c.v148, c.q, c.task, c.get,
        c.both)
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
             both(lambda r, path=path: _tag(
                 resp_problems(r[0], r[1]), 'node-ident-error'
                 if path == '/v1/nodes/bad%20name' and r[0][0] == r[1][0]
                 else None),
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
    # a minor above both maxima (1.99 is inside the newest Ironic's range)
    above = (1, max(99, g['imax'][1] + 1, g['smax'][1] + 1))
    task('GET /v1/conductors at %s (406 naming each server\'s range)'
         % _vs(above), get('/v1/conductors', _vheaders(above)), too_high)

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


def case_node_lists(c):
    """Node lists (every node representation: served fields)."""
    served, task, get = c.served, c.task, c.get
    for path in ('/v1/nodes', '/v1/nodes?detail=True', '/v1/nodes?limit=2',
                 '/v1/nodes/detail?limit=2', '/v1/nodes?detail=True&limit=2'):
        task('GET %s' % path, get(path),
             lambda r: node_list_problems(r[0], r[1], served))


def case_fault_filters(c):
    """?fault= for each fault a release may write (400 with the release's
    VALID_FAULTS where it is not one of them), an unknown one, and below
    1.42 (406): status, body and headers."""
    g, served, task, get, both = c.g, c.served, c.task, c.get, c.both
    for fault in ('power failure', 'clean failure', 'rescue abort failure',
                  'service failure'):
        path = '/v1/nodes/detail?fault=%s' % urllib.parse.quote(fault)
        task('GET %s' % path, get(path),
             lambda r: node_list_problems(r[0], r[1], served))
    for path, hdrs in (('/v1/nodes?fault=bogus', None),
                       ('/v1/nodes?fault=power%20failure', _vheaders((1, 41)))):
        task('GET %s%s (status, body, headers)' % (
            path, ' at 1.41' if hdrs else ''), get(path, hdrs),
            both(lambda r: resp_problems(r[0], r[1]),
                 lambda r: header_problems(r[0], r[1], g)))


def case_each_conductor(c):
    """Each conductor."""
    (P, H, I, S, same, req_pool, ic, rci, chk, judge, q, tasks) = (
        c.P, c.H, c.I, c.S, c.same, c.req_pool, c.ic, c.rci, c.chk, c.judge,
        c.q, c.tasks)

    def one_conductor(h):
        path = '/v1/conductors/%s' % q(h)
        ri, rs = P.get(path)
        if ri[0] == 400 and ':' in h:
            # Ironic up to 23.x validates {hostname} with args.name (RFC 3986
            # unreserved characters only): host:port hostnames get a 400.
            chk.note('NOTE this Ironic answers 400 for GET /v1/conductors/'
                     '{host:port}; the sidecar must answer 200 with the '
                     'detail entry')
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


def case_case_variants(c):
    """Case variants: lookups are the database's comparison (PostgreSQL and
    SQLite: case-sensitive -> 404; MySQL/MariaDB: case-insensitive collation
    -> 200 with the stored hostname); ?conductor= is an exact Python
    comparison on every backend."""
    served, ic, q, task, get = c.served, c.ic, c.q, c.task, c.get
    for h in [x for x in ic if ':' not in x][:2]:
        v = q(h.swapcase())
        task('GET /v1/conductors/%s (case variant)' % v,
             get('/v1/conductors/%s' % v),
             lambda r: resp_problems(r[0], r[1], volatile=('alive',)))
        task('GET /v1/nodes?conductor=%s (case variant)' % v,
             get('/v1/nodes?conductor=%s' % v),
             lambda r: node_list_problems(r[0], r[1], served))


def case_conductor_filters(c):
    """?conductor= for every conductor hostname (+ a missing one): the lists
    and, inside the budget, Ironic's list == detail's conductor."""
    (P, served, ic, expected_by_host, judge, in_budget, q, tasks) = (
        c.P, c.served, c.ic, c.expected_by_host, c.judge, c.in_budget, c.q,
        c.tasks)
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


def case_conductor_filter_limit(c):
    """?conductor=X&limit=3: Ironic 21.4 filters the page already cut to 3
    nodes (so the page has only those of the first 3 nodes that match); the
    sidecar filters first (the first 3 that match, next link when there are
    more). Anything else is checked as usual."""
    (P, H, S, served, inodes_l, busy, q, task) = (
        c.P, c.H, c.S, c.served, c.inodes_l, c.busy, c.q, c.task)
    accepted = c.accepted
    first3 = [n['uuid'] for n in inodes_l[:3]]

    def filt_limit(r):
        ri, rs, rall = r
        p = node_list_problems(ri, rs, served, membership_volatile=True)
        if not p or ri[0] != 200 or rs[0] != 200 or rall[0] != 200:
            return p
        allu = [n['uuid'] for n in rall[2].get('nodes', [])]
        iu = [n['uuid'] for n in ri[2].get('nodes', [])]
        su = [n['uuid'] for n in rs[2].get('nodes', [])]
        # the nodes both list must agree but for accepted differences
        # (which stay reported as such)
        # (the nodes alone: when the first 3 all match, Ironic's page has
        # a next link, without the conductor filter, part of this
        # difference)
        rest = node_list_problems(
            (200, None, {'nodes': ri[2].get('nodes', [])}),
            (200, None, {'nodes': [n for n in rs[2]['nodes']
                                   if n['uuid'] in iu]}), served)
        if iu == [u for u in first3 if u in allu] and su == allu[:3] and \
                bool(rs[2].get('next')) == (len(allu) > 3) and \
                all(x.difference in accepted for x in rest):
            return [Problem('Ironic lists %s (the matches among the first 3 '
                            'nodes; next link %s), the sidecar %s (the first '
                            '3 matches; next link %s)' % (
                                iu, ri[2].get('next') or 'absent', su,
                                rs[2].get('next') or 'absent'),
                            difference='conductor-filter-limit')] + rest
        # the next link follows the membership: while that is in flux (a
        # heartbeat crossing between the three requests) so is the link,
        # and the pair is fetched again after --settle instead of failing
        # on the first look (CI: Ironic 16.0 listed none of cond-85's
        # nodes, the sidecar three and a next link, 10 s after setup)
        if any(x.volatile for x in p):
            p = [Problem(x.text, True, x.difference) for x in p]
        return p
    lpath = '/v1/nodes?conductor=%s&limit=3' % q(busy)
    task('GET %s' % lpath,
         lambda: P.get(lpath) + (http_get(S, '/v1/nodes?conductor=%s' %
                                          q(busy), H),),
         filt_limit)


def case_fields_list(c):
    """/v1/nodes?fields=uuid,name,conductor (Ironic 21.4: 500, bug)."""
    (P, same, served, chk, judge, tasks) = (
        c.P, c.same, c.served, c.chk, c.judge, c.tasks)
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
            chk.note('NOTE GET %s: this Ironic answers %s; the sidecar\'s 200'
                     ' is checked against Ironic\'s detail list' % (fpath,
                                                                 ri[0]))
            return [judge('GET %s: sidecar 200 == Ironic\'s detail (Ironic: '
                          '%s)' % (fpath, ri[0]), fetch, check)]
        return [Verdict('GET %s' % fpath, [Problem(
            'Ironic %s, sidecar %s' % (ri[0], rs[0]))], 0, None)]
    tasks.append(fields_list)


def case_each_node(c):
    """Per node: ?fields=uuid,conductor, the node (by name if it has one), and
    /v1/nodes/{uuid}/conductor."""
    (P, H, S, same, served, inodes, conductor_of, judge, in_budget, q,
     tasks) = (c.P, c.H, c.S, c.same, c.served, c.inodes, c.conductor_of,
               c.judge, c.in_budget, c.q, c.tasks)

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


CASES = [
    ('version documents', case_version_documents),
    ('request ids', case_request_ids),
    ('no version header', case_no_version_header),
    ('conductor lists', case_conductor_lists),
    ('errors and versions', case_errors_and_versions),
    ('node lists', case_node_lists),
    ('fault filters', case_fault_filters),
    ('each conductor', case_each_conductor),
    ('case variants', case_case_variants),
    ('conductor filters', case_conductor_filters),
    ('conductor filter limit', case_conductor_filter_limit),
    ('fields list', case_fields_list),
    ('each node', case_each_node),
]



def cmd_compare(a):
    import concurrent.futures
    accept = [x for group in a.accept for x in group]
    accepted = set(accept)
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
            # refetch while what differs is heartbeat timing (or a
            # difference accepted anyway)
            if not probs or attempt >= a.retries or \
                    not all(p.volatile or p.difference in accepted
                            for p in probs) or \
                    not any(p.volatile for p in probs):
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
                # the exception and the frames nearest to it (the last
                # lines): the failure's cause, never cut by fail()
                import traceback
                tb = traceback.format_exc().rstrip().splitlines()
                keep = tb[-20:]
                if len(tb) > len(keep):
                    keep = ['(%d traceback lines above)' % (
                        len(tb) - len(keep))] + keep
                return [Verdict('harness error', [Problem(
                    '\n'.join(keep))], 0, None)]
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
            # Ironic's alive: up to 24.x the heartbeat not older than
            # heartbeat_timeout, `online` ignored (an offline conductor with a
            # fresh heartbeat is alive); since 25.0 (161374f76) `online and`
            # a fresh heartbeat.
            rel = _ver(fleet.get('ironic_release', '21.4'))
            for c in fleet['conductors']:
                want = c['age_seconds'] <= fleet['heartbeat_timeout']
                if rel >= (25, 0):
                    want = want and c['online']
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
    # (the table CASES)
    q = lambda x: urllib.parse.quote(x, safe=':')  # noqa: E731
    c = Context(
        P=P, g=g, H=H, I=I, S=S, same=same, req_pool=req_pool,
        served=served, inodes=inodes, inodes_l=inodes_l, ic=ic, rci=rci,
        expected_by_host=expected_by_host, conductor_of=conductor_of,
        chk=chk, judge=judge, in_budget=in_budget, v1_notes=[], ri0=ri0,
        some=sorted(inodes)[0],
        busy=max(expected_by_host, key=lambda h: len(expected_by_host[h]),
                 default='no-such-conductor'),
        plain=[h for h in ic if ':' not in h] or ['no-such-conductor'],
        v148=_vheaders((1, 48)), q=q, accepted=accepted)
    for _name, case in CASES:
        case(c)

    run(c.tasks)
    for n in c.v1_notes[:1]:
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
