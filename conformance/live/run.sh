#!/bin/bash
# The live-fleet conformance (issue 42): real ironic-api and three real
# ironic-conductors of the host's Ironic (21.4) beside the sidecar, on MariaDB
# and PostgreSQL, driven through SIGTERM / SIGKILL / SIGUSR1 scenarios
# (conformance/live/livefleet.py says what is compared and the lags).
#
# Usage: conformance/live/run.sh SIDECAR_BINARY
#   LIVE_BACKENDS  "mysql postgresql" (default): the 21.4 scenarios' backends
#   LIVE_STORM     "postgresql" (default; "" to skip): the 21.4 deploy storm and emptied group's backends
#   LIVE_NEWEST    "39.0" (default; "" to skip): the newest release (sid chroot) on PostgreSQL,
#                  a SIGUSR2 drain with deploys in flight, then the stale conductor cleanup
#   LIVE_HOSTPORT  "29.0" (default; "" to skip): HOST:PORT naming ([json_rpc]port 8090) in the
#                  trixie chroot (make provision), SIGKILL holding locks, on MariaDB
#   MYURL, PGURL   server URLs without a database (root@ / postgres@ on loopback)
# Databases issue42_live_*; work files under a temporary folder (kept on failure).
set -euo pipefail
SIDECAR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
HERE="$(cd "$(dirname "$0")" && pwd)"
MYURL="${MYURL:-mysql+pymysql://root@127.0.0.1}"
PGURL="${PGURL:-postgresql+psycopg2://postgres@127.0.0.1}"
PY=/usr/bin/python3
$PY -c 'import ironic, sqlalchemy' 2>/dev/null || { echo "live fleet: the host's python3-ironic is missing (make provision)" >&2; exit 1; }
command -v baremetal >/dev/null || { echo "live fleet: the baremetal CLI is missing (python3-ironicclient, make provision)" >&2; exit 1; }
work="$(mktemp -d /tmp/live-fleet.XXXXXX)"
rc=0
for b in ${LIVE_BACKENDS-mysql postgresql}; do
    case "$b" in
        mysql) url="$MYURL/issue42_live_my" ;;
        postgresql) url="$PGURL/issue42_live_pg" ;;
        *) echo "unknown backend $b" >&2; exit 2 ;;
    esac
    echo "== live fleet: Ironic 21.4 (host) on $b"
    if ! timeout 900 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$work/$b"; then
        rc=1
        echo "live fleet on $b failed: logs in $work/$b" >&2
    fi
done
for b in ${LIVE_STORM-postgresql}; do
    case "$b" in
        mysql) url="$MYURL/issue42_live_st" ;;
        postgresql) url="$PGURL/issue42_live_st" ;;
        *) echo "unknown backend $b" >&2; exit 2 ;;
    esac
    echo "== live fleet: Ironic 21.4 (host) on $b, a deploy storm into max_concurrent_deploy, a conductor group emptied, then a power failure"
    if ! timeout 600 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$work/storm-$b" \
            --scenarios storm,emptygroup,powerfail; then
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
    if timeout 600 "$PY" "$HERE/livefleet.py" --sidecar "$SIDECAR" --db-url "$url" --workdir "$inner" \
            --chroot "$root" --release "$rel" "$@"; then
        rm -rf "${root:?}$inner"
    else
        rc=1
        echo "live fleet $rel failed: logs in $root$inner" >&2
    fi
}
for rel in ${LIVE_HOSTPORT-29.0}; do
    in_chroot "$rel" "MariaDB, HOST:PORT names" "$MYURL/issue42_live_hp" --rpc-port 8090 --scenarios hostport --nodes 6
done
for rel in ${LIVE_NEWEST-39.0}; do
    in_chroot "$rel" "PostgreSQL, a SIGUSR2 drain and the stale conductor cleanup" "$PGURL/issue42_live_cu" \
        --scenarios drain,cleanup --nodes 6
done
[[ $rc -ne 0 ]] || rm -rf "$work"
exit $rc
