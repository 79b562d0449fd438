#!/usr/bin/python3
"""Conformance harness: real Ironic vs ironic-conductor-exporter's JSON API.

Run setup/serve/heartbeat/dropdb with the python3 that has the Ironic
release (the host's /usr/bin/python3 for 21.4, a chroot's for the others:
run.sh); compare/cli/capture need only the standard library (cli: the
`baremetal` CLI).

Subcommands (modules):
  setup    fresh database + Ironic's own migrations (create_schema on
           SQLite) + a random fleet written only through Ironic's DB API
           (ironic.db.api.get_instance())                         (fleet.py)
  heartbeat, dropdb                                               (fleet.py)
  serve    run Ironic's real API service (ironic.cmd.api, ironic.command.api
           in newer releases) on 127.0.0.1:PORT, noauth, json-rpc transport
           (no conductor needed for GETs)                        (server.py)
  compare  check the sidecar's JSON API against Ironic's answers (the
           sidecar's contract, README.md "compare"), a table of cases
                                                                (compare.py)
  cli      run the stock `baremetal` CLI against an endpoint and check
           output                                                   (cli.py)
  capture  save real Ironic responses                           (capture.py)
  limits, limits-compare  Ironic's own concurrency-limit answer per group
           vs the sidecar's ironic_concurrent_action_headroom    (limits.py)

See README.md next to this file.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

from capture import cmd_capture  # noqa: E402
from cli import cmd_cli  # noqa: E402
from compare import DIFFERENCES, cmd_compare  # noqa: E402
from fleet import cmd_dropdb, cmd_heartbeat, cmd_setup  # noqa: E402
from limits import cmd_limits, cmd_limits_compare  # noqa: E402
from server import cmd_serve  # noqa: E402
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
    s.add_argument('--max-nodes', type=int, default=0,
                   help='at most this many nodes (0: the 50-400 drawn)')
    s.add_argument('--out')
    s.add_argument('--provision-states', action='store_true',
                   help='give the nodes provision states (fleet.py '
                        'PROVISION_STATES), from an RNG of their own')
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
    s.add_argument('--conductor-option', action='append', default=[],
                   metavar='KEY=VALUE', help='a [conductor] option of the '
                   "API's ironic.conf (repeatable)")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser('limits', help="Ironic's own concurrency-limit "
                       'answer per conductor group (limits.py)')
    s.add_argument('--config-file', required=True)
    s.add_argument('--fleet', required=True)
    s.add_argument('--out', required=True)
    s.set_defaults(func=cmd_limits)

    s = sub.add_parser('limits-compare', help="the sidecar's headroom vs "
                       "Ironic's answer (limits.py)")
    s.add_argument('--sidecar', required=True)
    s.add_argument('--limits', required=True)
    s.add_argument('--ironic', help="Ironic's API, for the nodes' health")
    s.set_defaults(func=cmd_limits_compare)

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
