"""What Ironic itself knows of its nodes beyond the API the sidecar serves:
Ironic's own answers vs the sidecar's metrics (the pgconf case).

`limits` (Ironic side, in the release's chroot) loads the ironic.conf the
API runs with, as an Ironic command does, and asks the release's own
ConductorManager._concurrent_action_limit (ironic/conductor/manager.py,
21.1+) whether it refuses a deploy ('provisioning') and a cleaning
('cleaning') with [conductor]conductor_group set to each conductor group of
the fleet, on the fleet's database: the answer a conductor of that group
gives. A release without the method has no limits.

`limits-compare` (host side) reads the sidecar's /metrics and checks that
ironic_concurrent_action_headroom <= 0 exactly where Ironic refuses, for
every group the sidecar reports, and that a release without limits has no
such series. With --ironic it also counts the nodes by hardware health as
Ironic's API answers them (GET /v1/nodes?fields=uuid,health at 1.109, 34.0+)
against ironic_nodes_health summed by health; an Ironic whose API predates
1.109 must leave the sidecar without that family. And node_history (18.2+):
every node's events as Ironic's API lists them (GET
/v1/nodes/{uuid}/history?detail=True at 1.78): their ERROR events by
conductor against ironic_conductor_history_errors, and each node's events
(severity, type, conductor) against the "Last events" of the sidecar's node
lookup, whose page must never carry an event's text.
"""

import html
import json
import re
import urllib.request

from common import Checker, _list_all_raw
from fleet import _prepare, import_ironic_command

ACTIONS = (('provisioning', 'deploy'), ('cleaning', 'clean'))


def cmd_limits(a):
    import_ironic_command()
    _prepare(['ironic-fleet', '--config-file', a.config_file])
    from ironic.common import exception
    from ironic.conductor import manager
    from ironic.conf import CONF
    from ironic.db import api as db_api
    with open(a.fleet) as f:
        fleet = json.load(f)
    if not hasattr(manager.ConductorManager, '_concurrent_action_limit'):
        out = {'limits': False}
    else:
        # Only the method's own state: the database API (a whole
        # ConductorManager would start a conductor).
        mgr = manager.ConductorManager.__new__(manager.ConductorManager)
        mgr.dbapi = db_api.get_instance()
        groups = sorted({c['conductor_group'] for c in fleet['conductors']} |
                        {n['conductor_group'] for n in fleet['nodes']})
        refused = {}
        for g in groups:
            CONF.set_override('conductor_group', g, 'conductor')
            for action, label in ACTIONS:
                try:
                    mgr._concurrent_action_limit(action)
                    refused.setdefault(g, {})[label] = False
                except exception.ConcurrentActionLimit:
                    refused.setdefault(g, {})[label] = True
        out = {'limits': True, 'refused': refused}
    with open(a.out, 'w') as f:
        json.dump(out, f)
    return 0


_SERIES = re.compile(r'^ironic_concurrent_action_headroom\{(.*)\} (\S+)$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def cmd_limits_compare(a):
    with open(a.limits) as f:
        ironic = json.load(f)
    with urllib.request.urlopen(a.sidecar + '/metrics', timeout=60) as r:
        body = r.read().decode()
    headroom = {}
    for line in body.splitlines():
        m = _SERIES.match(line)
        if m:
            labels = dict(_LABEL.findall(m.group(1)))
            headroom[(labels['conductor_group'], labels['action'])] = float(m.group(2))
    ck = Checker()
    if a.ironic:
        _health(ck, a.ironic, body)
        _history(ck, a.ironic, a.sidecar, body)
    if not ironic['limits']:
        ck.eq('no concurrency limits in this release: no headroom series', {}, headroom)
    else:
        refused = ironic['refused']
        if not headroom:
            ck.fail('the sidecar reports no headroom while Ironic has limits')
        counts = {True: 0, False: 0}
        for (group, action), value in sorted(headroom.items()):
            if group not in refused:
                ck.fail('headroom of group %r, which the fleet does not have' % group)
                continue
            want = refused[group][action]
            counts[want] += 1
            ck.eq('%s refused in group %r (headroom %g)' % (action, group, value), want, value <= 0)
        print('limits: %d refused, %d accepted (group x action)' % (counts[True], counts[False]))
    print('%d passed, %d failed' % (ck.passed, ck.failed))
    return 1 if ck.failed else 0


_HEALTH = re.compile(r'^ironic_nodes_health\{(.*)\} (\S+)$')


def _health(ck, ironic, metrics):
    """The nodes by health: Ironic's API (1.109+) vs ironic_nodes_health."""
    side = {}
    for line in metrics.splitlines():
        m = _HEALTH.match(line)
        if m:
            h = dict(_LABEL.findall(m.group(1)))['health']
            side[h] = side.get(h, 0) + int(float(m.group(2)))
    with urllib.request.urlopen(ironic + '/', timeout=60) as r:
        top = json.loads(r.read().decode())
    maximum = top['default_version']['version']
    if tuple(int(x) for x in maximum.split('.')) < (1, 109):
        ck.eq('Ironic %s has no nodes.health: no ironic_nodes_health' % maximum, {}, side)
        return
    status, _, body = _list_all_raw(ironic, '/v1/nodes?fields=uuid,health', 'nodes',
                                    {'X-OpenStack-Ironic-API-Version': '1.109'})
    if status != 200:
        ck.fail('Ironic GET /v1/nodes?fields=uuid,health at 1.109: %s' % status, body)
        return
    want = {}
    for n in body['nodes']:
        if n.get('health') is not None:
            want[n['health']] = want.get(n['health'], 0) + 1
    ck.eq('nodes by health: Ironic\'s API vs ironic_nodes_health', want, side)
    print('health: %s' % (want or 'no node has one'))


_HISTORY = re.compile(r'^ironic_conductor_history_errors\{(.*)\} (\S+)$')
_LOOKUP_EVENTS = re.compile(r'<dd id="lookup-events">(.*?)</dd>', re.S)
_EVENT = re.compile(r'<span(?: class="dead")?>([^<]*)</span> (.*?) on <a href="[^"]*">([^<]*)</a>')


def _history(ck, ironic, sidecar, metrics):
    """node_history: Ironic's API vs the sidecar's metric and lookup."""
    side = {}
    for line in metrics.splitlines():
        m = _HISTORY.match(line)
        if m and float(m.group(2)) > 0:
            side[dict(_LABEL.findall(m.group(1)))['hostname']] = int(float(m.group(2)))
    hdrs = {'X-OpenStack-Ironic-API-Version': '1.78'}
    status, _, body = _list_all_raw(ironic, '/v1/nodes?fields=uuid', 'nodes', hdrs)
    if status == 406:
        ck.eq('Ironic without the node history API (1.78): no history errors', {}, side)
        return
    if status != 200:
        ck.fail('Ironic GET /v1/nodes?fields=uuid at 1.78: %s' % status, body)
        return
    want, nodes = {}, 0
    for n in body['nodes']:
        st, _, hist = _list_all_raw(ironic, '/v1/nodes/%s/history?detail=True' % n['uuid'], 'history', hdrs)
        if st != 200:
            ck.fail('Ironic GET /v1/nodes/%s/history: %s' % (n['uuid'], st), hist)
            continue
        events = hist['history']
        for e in events:
            if e['severity'] == 'ERROR':
                want[e['conductor']] = want.get(e['conductor'], 0) + 1
        if not events:
            continue
        nodes += 1
        # the page is "/" for a browser; other clients get the API's root
        req = urllib.request.Request(sidecar + '/?node=' + n['uuid'], headers={'Accept': 'text/html'})
        with urllib.request.urlopen(req, timeout=60) as r:
            page = r.read().decode()
        m = _LOOKUP_EVENTS.search(page)
        shown = sorted((html.unescape(s), html.unescape(t), html.unescape(c))
                       for s, t, c in _EVENT.findall(m.group(1) if m else ''))
        # the fleet writes at most 4 a node: the lookup shows them all
        # (its last 5); as a set, since Ironic's API orders by created_at,
        # which MySQL keeps to the second
        if not ck.eq('node %s: its events (Ironic\'s API) on the lookup' % n['uuid'],
                     sorted((e['severity'], e['event_type'], e['conductor']) for e in events), shown):
            i = page.find('<dl>')
            print('     the lookup: %s' % (m.group(0) if m else page[i:i + 1500] if i >= 0 else page[:600]))
        if 'HISTORY-TEXT-NEVER-SHOWN' in page:
            ck.fail('node %s: the lookup shows an event\'s text' % n['uuid'])
    ck.eq('ERROR events by conductor: Ironic\'s API vs ironic_conductor_history_errors', want, side)
    print('history: %d node(s) with events, errors by conductor %s' % (nodes, want or 'none'))
