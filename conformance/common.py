"""HTTP helpers and the Checker shared by compare and cli."""

import json
import time
import urllib.error
import urllib.parse
import urllib.request

# --------------------------------------------------------------------------
# HTTP helpers (compare/cli)
# --------------------------------------------------------------------------

LATEST = {'X-OpenStack-Ironic-API-Version': 'latest',
          'Accept': 'application/json'}
# No version header at all (Ironic: 1.1, the sidecar: its maximum).
NO_VERSION = {'Accept': 'application/json'}


# Ironic's API is slow under load (a `?conductor=` list builds every node's
# ring lookup): a generous timeout, and a bounded retry of requests that got
# no HTTP answer at all (timeout, refused, reset). Any HTTP answer, error or
# not, is returned as it is: retries never hide a difference.
HTTP_TIMEOUT = 120
HTTP_ATTEMPTS = 3


def http_get(base, path, headers=None, timeout=HTTP_TIMEOUT):
    """GET base+path -> (status, headers, parsed body). headers None means
    LATEST; pass NO_VERSION to send no version header."""
    import socket
    url = base.rstrip('/') + path
    req = urllib.request.Request(
        url, headers=dict(LATEST if headers is None else headers))
    for attempt in range(HTTP_ATTEMPTS):
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                body = r.read()
                status, hdrs = r.status, _Headers(r.headers.items())
            break
        except urllib.error.HTTPError as e:
            body, status, hdrs = e.read(), e.code, _Headers(e.headers.items())
            break
        except (urllib.error.URLError, socket.timeout, ConnectionError) as e:
            if attempt + 1 == HTTP_ATTEMPTS:
                raise RuntimeError('GET %s: no answer after %d attempts '
                                   '(%ss timeout each): %s' % (
                                       url, HTTP_ATTEMPTS, timeout, e))
            time.sleep(1 + attempt)
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
