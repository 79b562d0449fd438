#!/bin/bash
# The live-fleet conformance (issue 42): real ironic-api and three real
# ironic-conductors of the host's Ironic (21.4) beside the sidecar, on MariaDB
# and PostgreSQL, driven through SIGTERM / SIGKILL / SIGUSR1 scenarios
# (conformance/live/livefleet.py says what is compared and the lags).
#
# Usage: conformance/live/run.sh SIDECAR_BINARY [releases]
#   LIVE_BACKENDS  "mysql postgresql" (default): the 21.4 scenarios' backends
#   LIVE_STORM     "postgresql" (default; "" to skip): the 21.4 deploy storm and emptied group's backends
#   LIVE_NEWEST    "39.0" (default; "" to skip): the newest release (sid chroot) on PostgreSQL,
#                  a SIGUSR2 drain with deploys in flight, then the stale conductor cleanup
#   LIVE_HOSTPORT  "29.0" (default; "" to skip): HOST:PORT naming ([json_rpc]port 8090) in the
#                  trixie chroot (make provision), SIGKILL holding locks, on MariaDB
#   LIVE_SQLITE    "21.4" (default; "" to skip): the host's Ironic on a SQLite file, one conductor,
#                  SIGTERM during tear-downs / SIGKILL holding locks / SIGUSR1 stop, each then restarted
#   LIVE_SQLITE_CLEANUP "39.0" (default; "" to skip): the stale row cleanup on SQLite (sid chroot):
#                  conductor A killed, then stopped, conductor B's cleanup on the same file
#   MYURL, PGURL   server URLs without a database (root@ / postgres@ on loopback)
#   LIVE_NET, LIVE_API_PORT, LIVE_SIDECAR_PORT  the fleet's loopback /24 (127.42.0: conductors on
#                  .2-.4), Ironic's API port (16342) and the sidecar's (16343): another run beside
#                  this one needs its own
#   LIVE_DB        database name prefix (issue42_live)
# With "releases" (make live-fleet-releases, not part of make test: about 35 minutes) it runs instead
# every scenario on the chroots' releases:
#   LIVE_RELEASES  "29.0 39.0"; LIVE_REL_BACKENDS "mysql postgresql";
#   LIVE_REL_FLEETS "main storm drain": main = SIGTERM during tear-downs, SIGKILL holding locks,
#                  SIGUSR1 stop, takeover; storm = deploy storm then a group emptied; drain = SIGUSR2
#                  with deploys in flight (23.1+). Databases ${LIVE_DB:-issue42_rel}_<backend>_<release>_<fleet>.
# Work files under a temporary folder (kept on failure).
set -euo pipefail
SIDECAR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
HERE="$(cd "$(dirname "$0")" && pwd)"
MYURL="${MYURL:-mysql+pymysql://root@127.0.0.1}"
PGURL="${PGURL:-postgresql+psycopg2://postgres@127.0.0.1}"
PY=/usr/bin/python3
NETARGS=(--net "${LIVE_NET:-127.42.0}" --api-port "${LIVE_API_PORT:-16342}" --sidecar-port "${LIVE_SIDECAR_PORT:-16343}")
if [[ "${2:-}" == releases ]]; then
    # every scenario on the chroots' releases: nothing of the default set
    LIVE_BACKENDS="" LIVE_STORM="" LIVE_NEWEST="" LIVE_HOSTPORT="" LIVE_SQLITE="" LIVE_SQLITE_CLEANUP=""
    DBP="${LIVE_DB:-issue42_rel}"
else
    LIVE_RELEASES=""
    DBP="${LIVE_DB:-issue42_live}"
fi
$PY -c 'import ironic, sqlalchemy' 2>/dev/null || { echo "live fleet: the host's python3-ironic is missing (make provision)" >&2; exit 1; }
command -v baremetal >/dev/null || { echo "live fleet: the baremetal CLI is missing (python3-ironicclient, make provision)" >&2; exit 1; }
work="$(mktemp -d /tmp/live-fleet.XXXXXX)"
rc=0
for b in ${LIVE_BACKENDS-mysql postgresql}; do
    case "$b" in
        mysql) url="$MYURL/${DBP}_my" ;;
        postgresql) url="$PGURL/${DBP}_pg" ;;
        *) echo "unknown backend $b" >&2; exit 2 ;;
    esac
    echo "== live fleet: Ironic 21.4 (host) on $b"
    if ! timeout 900 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$work/$b" "${NETARGS[@]}"; then
        rc=1
        echo "live fleet on $b failed: logs in $work/$b" >&2
    fi
done
for b in ${LIVE_STORM-postgresql}; do
    case "$b" in
        mysql) url="$MYURL/${DBP}_st" ;;
        postgresql) url="$PGURL/${DBP}_st" ;;
        *) echo "unknown backend $b" >&2; exit 2 ;;
    esac
    echo "== live fleet: Ironic 21.4 (host) on $b, a deploy storm into max_concurrent_deploy, a conductor group emptied, then a power failure"
    if ! timeout 600 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$work/storm-$b" \
            "${NETARGS[@]}" --scenarios storm,emptygroup,powerfail; then
        rc=1
        echo "live fleet storm on $b failed: logs in $work/storm-$b" >&2
    fi
done
CHROOT_CACHE="${CHROOT_CACHE:-/var/cache/ironic-conductor-exporter/chroots}"
# in_chroot REL WHAT DBURL LIVEFLEET_ARGS...: livefleet.py with REL's Ironic
# (its chroot from make provision), work files inside the chroot (kept on
# failure)
in_chroot() {
    local rel="$1" what="$2" url="$3" root inner
    shift 3
    case "$rel" in
        29.0) root="$CHROOT_CACHE/trixie" ;;
        39.0) root="$CHROOT_CACHE/sid" ;;
        *) echo "no chroot known for $rel" >&2; exit 2 ;;
    esac
    [[ -x "$root/usr/bin/python3" ]] || { echo "live fleet: no $rel chroot at $root (make provision)" >&2; rc=1; return; }
    inner="$(mktemp -d "$root/tmp/live-fleet.XXXXXX")"; inner="${inner#"$root"}"
    echo "== live fleet: Ironic $rel ($root), $what"
    if timeout "${LIVE_TIMEOUT:-600}" "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$inner" \
            --chroot "$root" --release "$rel" "${NETARGS[@]}" "$@"; then
        rm -rf "${root:?}$inner"
    else
        rc=1
        echo "live fleet $rel failed: logs in $root$inner" >&2
    fi
}
for rel in ${LIVE_HOSTPORT-29.0}; do
    in_chroot "$rel" "MariaDB, HOST:PORT names" "$MYURL/${DBP}_hp" --rpc-port 8090 --scenarios hostport --nodes 6
done
for rel in ${LIVE_NEWEST-39.0}; do
    in_chroot "$rel" "PostgreSQL, a SIGUSR2 drain and the stale conductor cleanup" "$PGURL/${DBP}_cu" \
        --scenarios drain,cleanup --nodes 6
done
for rel in ${LIVE_SQLITE-21.4}; do
    [[ "$rel" == 21.4 ]] || { echo "LIVE_SQLITE: only the host's 21.4" >&2; exit 2; }
    echo "== live fleet: Ironic 21.4 (host) on SQLite, one conductor"
    if ! timeout 600 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url sqlite --workdir "$work/sqlite" \
            "${NETARGS[@]}" --conductors 1 --scenarios single --nodes 4; then
        rc=1
        echo "live fleet on SQLite failed: logs in $work/sqlite" >&2
    fi
done
for rel in ${LIVE_SQLITE_CLEANUP-39.0}; do
    in_chroot "$rel" "SQLite, the stale conductor cleanup (one conductor at a time)" sqlite \
        --conductors 1 --scenarios cleanup --nodes 3
done
for rel in ${LIVE_RELEASES-29.0 39.0}; do
    for b in ${LIVE_REL_BACKENDS-mysql postgresql}; do
        case "$b" in
            mysql) base="$MYURL/${DBP}_my_${rel//./}" ;;
            postgresql) base="$PGURL/${DBP}_pg_${rel//./}" ;;
            *) echo "unknown backend $b" >&2; exit 2 ;;
        esac
        for fleet in ${LIVE_REL_FLEETS-main storm drain}; do
            case "$fleet" in
                main) LIVE_TIMEOUT=900 in_chroot "$rel" "$b: SIGTERM, SIGKILL, SIGUSR1, takeover" "${base}_main" --nodes 9 ;;
                storm) in_chroot "$rel" "$b: deploy storm, group emptied" "${base}_st" --scenarios storm,emptygroup --nodes 9 ;;
                drain) in_chroot "$rel" "$b: SIGUSR2 drain" "${base}_dr" --scenarios drain --nodes 6 ;;
                *) echo "unknown fleet $fleet" >&2; exit 2 ;;
            esac
        done
    done
done
[[ $rc -ne 0 ]] || rm -rf "$work"
exit $rc
