#!/usr/bin/env bash
# Conformance of the sidecar against real, unpatched Ironic releases
# (make conformance). For each release (each in its Debian chroot, built by
# chroots.sh when missing) and each case (a backend and a seed): setup ->
# serve Ironic's API (background) -> start the sidecar on the same database
# (it detects the release from the database; never given --ironic.release)
# -> heartbeat -> compare Ironic vs the sidecar -> the stock baremetal CLI
# (the host's) against the sidecar -> drop the database. Prints a matrix
# release x backend and a final "N passed, M failed" line summed over every
# step.
#
# Usage: conformance/run.sh [SIDECAR_BINARY]
#   With no binary (or "ironic") it is the harness' self-check: Ironic is
#   compared with itself and the CLI runs against Ironic.
#
# Releases (RELEASES, default "16.0 21.4 29.0 newest"):
#   16.0    Debian bullseye chroot (Victoria)
#   21.4    the host (Debian bookworm's python3-ironic, 2023.1)
#   29.0    Debian trixie chroot (2025.1)
#   newest  Debian sid chroot (whatever sid has: 39.0 when written)
# Ironic-side steps (setup, serve, heartbeat, dropdb) run inside the release's
# chroot with the harness copied into it (the chroot shares the loopback
# network, so it reaches PostgreSQL and MariaDB on 127.0.0.1; SQLite files
# and Ironic's ironic.conf live under the chroot, the sidecar is given their
# path from the host). compare, cli and the sidecar run on the host.
#
# Environment:
#   RELEASES   releases to run (see above)
#   CASES      BACKEND:SEED ... run for every release (default "postgresql:1
#              mysql:2 sqlite:3 pgconf:4"); the seed is offset by SEED_OFFSET
#              and by the release (so each release sees other fleets).
#              Backends:
#                postgresql  PGURL, sidecar given --db.dsn and
#                            --ironic.heartbeat-timeout
#                mysql       MYURL (MariaDB/MySQL through pymysql)
#                sqlite      a file under the (chroot's) work directory
#                pgconf      PostgreSQL with a non-default hash_ring_algorithm,
#                            hash_partition_exponent, heartbeat_timeout and
#                            concurrency limits per release (pgconf_of,
#                            limits_of below), which the sidecar learns only
#                            from --ironic.config-file (the ironic.conf the
#                            Ironic API uses); its nodes have provision
#                            states, and Ironic's own _concurrent_action_limit
#                            is asked per group (limits.py)
#   SEED_OFFSET added to every seed (default 0): run again with other
#              offsets for more fleets
#   BACKENDS   keep only the cases of these backends (e.g. "mysql sqlite")
#   PGURL      server URL without database (default
#              postgresql+psycopg2://postgres@127.0.0.1)
#   MYURL      MariaDB/MySQL server URL without database (default
#              mysql+pymysql://root@127.0.0.1)
#   CHROOT_CACHE where the chroots are (default
#              /var/cache/ironic-conductor-exporter/chroots)
#   KEEP=1     keep databases and logs
#   NODES_MAX  at most this many nodes per fleet (default 150; the fleets
#              draw 50-400)
#   CLI_BACKENDS the backends whose cases also run the cli step (default
#              "postgresql": the CLI reads the sidecar's HTTP, the same code
#              on every backend)
#   CLI_SAMPLE conductors/nodes sampled by the cli step (default 3)
#   ACCEPT     known differences compare reports as NOTEs instead of
#              failures (comma-separated; see README.md), default
#              "node-conductor-below-1.49,conductor-filter-limit"
#   SHOW_LINES lines of each step's output shown (default 120)
set -u -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3            # Debian's python: python3-ironic (host), the CLI
RELEASES="${RELEASES:-16.0 21.4 29.0 newest}"
CASES="${CASES:-postgresql:1 mysql:2 sqlite:3 pgconf:4}"
if [[ -n "${BACKENDS:-}" ]]; then
    kept=""
    for c in $CASES; do
        for b in $BACKENDS; do [[ "${c%%:*}" == "$b" ]] && kept+="$c "; done
    done
    CASES="$kept"
fi
SEED_OFFSET="${SEED_OFFSET:-0}"
SIDECAR="${1:-ironic}"
[[ "$SIDECAR" == ironic || "$SIDECAR" == */* ]] || SIDECAR="./$SIDECAR"
[[ "$SIDECAR" == ironic || -x "$SIDECAR" ]] || { echo "no executable sidecar at $SIDECAR" >&2; exit 2; }
[[ "$SIDECAR" == ironic ]] || SIDECAR="$(cd "$(dirname "$SIDECAR")" && pwd)/$(basename "$SIDECAR")"
PGURL="${PGURL:-postgresql+psycopg2://postgres@127.0.0.1}"
MYURL="${MYURL:-mysql+pymysql://root@127.0.0.1}"
CLI_SAMPLE="${CLI_SAMPLE:-3}"
CLI_BACKENDS="${CLI_BACKENDS-postgresql}"
NODES_MAX="${NODES_MAX:-150}"
CHROOT_CACHE="${CHROOT_CACHE:-/var/cache/ironic-conductor-exporter/chroots}"
export CHROOT_CACHE
# The sidecar's deliberate differences from Ironic (see api/doc.go): the
# spec's 404 below 1.49 on /v1/nodes/{node}/conductor, and ?conductor=
# applied before pagination. Set ACCEPT= (empty) to see them fail.
ACCEPT="${ACCEPT-node-conductor-below-1.49,conductor-filter-limit}"
SHOW_LINES="${SHOW_LINES:-120}"
# the work directory's path as Ironic sees it (inside each chroot; on the
# host for 21.4); the host sees it at $ROOT$WIN
WIN="/tmp/ironic-conformance.$$.$RANDOM"
DBPREFIX="ironic_conformance_$$_"

# release -> Debian suite ("" = the host) and the non-default settings of
# its pgconf case: hash_ring_algorithm hash_partition_exponent
# heartbeat_timeout (hash_ring_algorithm is honoured since 15.2)
suite_of() {
    case "$1" in
    16.0) echo bullseye ;; 21.4) echo "" ;; 29.0) echo trixie ;; newest) echo sid ;;
    *) return 1 ;;
    esac
}
pgconf_of() {
    case "$1" in
    16.0) echo "sha1 6 45" ;; 21.4) echo "sha256 7 30" ;;
    29.0) echo "sha512 8 40" ;; *) echo "sha384 6 50" ;;
    esac
}
# the [conductor] concurrency limits of its pgconf case (ironic.conf, which
# Ironic and the sidecar read; 16.0 has no limits and ignores them): small
# enough that the fleet's nodes (setup --provision-states) reach some
limits_of() {
    case "$1" in
    16.0) echo "max_concurrent_deploy=3 max_concurrent_clean=3" ;;
    21.4) echo "max_concurrent_deploy=1000 max_concurrent_clean=4" ;;
    29.0) echo "max_concurrent_deploy=4 max_concurrent_clean=1000 max_concurrent_per_conductor_group=true" ;;
    *)    echo "max_concurrent_deploy=3 max_concurrent_clean=3 max_concurrent_per_conductor_group=true" ;;
    esac
}
# the differences accepted for a release besides ACCEPT (compare.py
# DIFFERENCES): what Ironic itself changed later, documented in README.md
accept_of() {
    case "$1" in
    16.0) echo "key-order,node-ident-error,root-description" ;;
    esac
}
# Release x backend pairs that cannot run, with why (printed in the summary).
# Keep empty unless Ironic itself cannot work there; format "RELEASE:BACKEND".
declare -A EXCLUDED=()

SERVE_PID=""
SERVE_CONF=""
SIDECAR_PID=""
DBS=()          # "ROOT|URL" for cleanup
ROOTS=()
TOTAL_PASS=0
TOTAL_FAIL=0
STEP_ERRORS=0
declare -A CELL_PASS=() CELL_FAIL=() CELL_ERR=()

# ipy ROOT ARGS...: the harness' Ironic side, in the release's chroot
ipy() {
    local root="$1"
    shift
    if [[ -z "$root" ]]; then
        "$PY" "$WIN/harness/ironic_fleet.py" "$@"
    else
        chroot "$root" /usr/bin/python3 "$WIN/harness/ironic_fleet.py" "$@"
    fi
}

stop_server() {
    # the sidecar first: its --ironic.config-file names the API's config
    if [[ -n "$SIDECAR_PID" ]]; then
        kill -TERM "$SIDECAR_PID" 2>/dev/null
        wait "$SIDECAR_PID" 2>/dev/null
    fi
    SIDECAR_PID=""
    if [[ -n "$SERVE_PID" ]] && kill -0 "$SERVE_PID" 2>/dev/null; then
        # serve runs in its own session (setsid): its pid is the group id;
        # the group holds the launcher and its API workers. Newer Ironic's
        # process manager can outlive SIGTERM: KILL the group after 5 s.
        kill -TERM -- "-$SERVE_PID" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$SERVE_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    # any process left that was started with this API's config file (newer
    # Ironic retitles its processes, "ironic-api: master process [...]")
    if [[ -n "$SERVE_CONF" ]]; then
        local p
        for p in /proc/[0-9]*; do
            grep -qaF -- "--config-file $SERVE_CONF" "$p/cmdline" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null
        done
    fi
    SERVE_PID=""
    SERVE_CONF=""
}

cleanup() {
    local rc=$?
    stop_server
    if [[ "${KEEP:-0}" != 1 ]]; then
        local d
        for d in "${DBS[@]}"; do
            ipy "${d%%|*}" dropdb --db-url "${d#*|}" >/dev/null 2>&1 || true
        done
        for d in "${ROOTS[@]}"; do rm -rf "$d$WIN"; done
    else
        local d
        for d in "${ROOTS[@]}"; do echo "kept: $d$WIN"; done
        echo "kept databases: ${DBS[*]:-}"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_ready URL PID TRIES INTERVAL: until URL answers 2xx, while PID lives.
wait_ready() {
    for _ in $(seq "$3"); do
        curl -fsS -m 10 -o /dev/null "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep "$4"
    done
    return 1
}

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# count FILE CELL: add the "N passed, M failed" of a step's output to the
# totals and to the matrix cell
count() {
    local line p f
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)"
    if [[ -z "$line" ]]; then
        echo "!! no summary line in $1"
        step_error "$2"
        return
    fi
    p=$(awk '{print $1}' <<<"$line")
    f=$(awk '{print $3}' <<<"$line")
    TOTAL_PASS=$((TOTAL_PASS + p))
    TOTAL_FAIL=$((TOTAL_FAIL + f))
    CELL_PASS[$2]=$(( ${CELL_PASS[$2]:-0} + p ))
    CELL_FAIL[$2]=$(( ${CELL_FAIL[$2]:-0} + f ))
}

step_error() {
    STEP_ERRORS=$((STEP_ERRORS + 1))
    CELL_ERR[$1]=$(( ${CELL_ERR[$1]:-0} + 1 ))
}

# print a step's output (FAIL lines with their diffs, NOTEs, the summary),
# at most SHOW_LINES lines; the summary line always
show() {
    local n
    n=$(grep -cvE '^(PASS|SKIP)' "$1")
    grep -vE '^(PASS|SKIP)' "$1" | head -"$SHOW_LINES" | sed 's/^/    /'
    if (( n > SHOW_LINES )); then
        echo "    ... $((n - SHOW_LINES)) more lines (KEEP=1 keeps $1)"
        tail -1 "$1" | sed 's/^/    /'
    fi
}

# the chroots (cached outside the clone; built when missing)
need=()
for rel in $RELEASES; do
    suite="$(suite_of "$rel")" || { echo "unknown release $rel in RELEASES" >&2; exit 2; }
    [[ -n "$suite" && ! -f "$CHROOT_CACHE/$suite/.ironic-conformance-ready" ]] && need+=("$suite")
done
if ((${#need[@]})); then
    echo "=== building chroots ${need[*]} in $CHROOT_CACHE (conformance/chroots.sh)"
    "$HERE/chroots.sh" "${need[@]}" || { echo "!! chroots.sh failed" >&2; exit 2; }
fi

START=$(date +%s)
ri=0
for rel in $RELEASES; do
    ri=$((ri + 1))
    suite="$(suite_of "$rel")"
    ROOT="${suite:+$CHROOT_CACHE/$suite}"
    mkdir -p "$ROOT$WIN/harness"
    ROOTS+=("$ROOT")
    cp "$HERE"/*.py "$ROOT$WIN/harness/"
    W="$ROOT$WIN"           # the work directory, seen from the host
    if [[ -n "$ROOT" ]]; then
        ver="$(cat "$ROOT/.ironic-conformance-ready")"
    else
        ver="$(dpkg-query -W -f='${Version}' python3-ironic)"
    fi
    echo "##### Ironic $rel: python3-ironic $ver (${suite:-host})"
    for case in $CASES; do
        backend="${case%%:*}"
        seed=$(( ${case#*:} + SEED_OFFSET + 100 * ri ))
        cell="$rel:${backend/pgconf/postgresql}"
        if [[ -n "${EXCLUDED[$rel:$backend]:-}" ]]; then
            echo "=== $rel $backend: EXCLUDED: ${EXCLUDED[$rel:$backend]}"
            continue
        fi
        SEED_START=$(date +%s)
        db="${DBPREFIX}${rel//./_}_${backend}_${seed}"
        hb=60
        serve_args=()
        setup_args=()
        side_url=""
        case "$backend" in
        postgresql) url="$PGURL/$db" ;;
        mysql)      url="$MYURL/$db" ;;
        sqlite)     url="sqlite:///$WIN/$db.sqlite"
                    side_url="sqlite:///$W/$db.sqlite" ;;
        pgconf)     url="$PGURL/$db"
                    read -r alg exp hb <<<"$(pgconf_of "$rel")"
                    serve_args=(--hash-partition-exponent "$exp" --hash-ring-algorithm "$alg")
                    for o in $(limits_of "$rel"); do serve_args+=(--conductor-option "$o"); done
                    setup_args=(--provision-states) ;;
        *)          echo "!! unknown backend in CASES: $case"
                    step_error "$cell"
                    continue ;;
        esac
        side_url="${side_url:-$url}"
        name="$rel-$backend-$seed"   # names the case's files
        DBS+=("$ROOT|$url")
        echo "=== $name: setup ($url)"
        if ! ipy "$ROOT" setup --db-url "$url" --seed "$seed" \
                --heartbeat-timeout "$hb" --max-nodes "$NODES_MAX" \
                --out "$WIN/fleet-$name.json" "${setup_args[@]}" \
                >"$W/setup-$name.out" 2>&1; then
            tail -n 30 "$W/setup-$name.out"
            step_error "$cell"
            continue
        fi
        grep -E '^  "(cond|Cond)' "$W/setup-$name.out" | sed 's/^ */    /'

        port="$(free_port)"
        echo "=== $name: serve on 127.0.0.1:$port"
        SERVE_CONF="$WIN/log-$name/ironic-api-$port.conf"
        if [[ -z "$ROOT" ]]; then
            setsid "$PY" "$WIN/harness/ironic_fleet.py" serve --db-url "$url" --port "$port" \
                --heartbeat-timeout "$hb" --log-dir "$WIN/log-$name" "${serve_args[@]}" \
                >"$W/serve-$name.out" 2>&1 &
        else
            setsid chroot "$ROOT" /usr/bin/python3 "$WIN/harness/ironic_fleet.py" serve \
                --db-url "$url" --port "$port" \
                --heartbeat-timeout "$hb" --log-dir "$WIN/log-$name" "${serve_args[@]}" \
                >"$W/serve-$name.out" 2>&1 &
        fi
        SERVE_PID=$!
        if ! wait_ready "http://127.0.0.1:$port/" "$SERVE_PID" 240 0.5; then
            echo "!! Ironic API did not come up"; tail -n 30 "$W/serve-$name.out"
            tail -n 50 "$W/log-$name"/ironic-api-*.log 2>/dev/null
            step_error "$cell"
            stop_server
            continue
        fi
        ep="http://127.0.0.1:$port"

        side="$ep"
        cli_args=(--endpoint "$ep" --ironic-endpoint)
        if [[ "$SIDECAR" != ironic ]]; then
            sport="$(free_port)"
            echo "=== $name: sidecar on 127.0.0.1:$sport"
            if [[ "$backend" == pgconf ]]; then
                # everything from the ironic.conf the Ironic API runs with
                side_args=(--ironic.config-file "$W/log-$name/ironic-api-$port.conf")
            else
                side_args=(--db.dsn "$side_url" --ironic.heartbeat-timeout "${hb}s")
            fi
            IRONIC_EXPORTER_DB_DSN= IRONIC_EXPORTER_IRONIC_RELEASE= "$SIDECAR" "${side_args[@]}" \
                --refresh.min-interval 1s --web.listen-address "127.0.0.1:$sport" \
                >"$W/sidecar-$name.log" 2>&1 &
            SIDECAR_PID=$!
            if ! wait_ready "http://127.0.0.1:$sport/readyz" "$SIDECAR_PID" 100 0.1; then
                echo "!! sidecar did not become ready"; tail -n 30 "$W/sidecar-$name.log"
                step_error "$cell"
                stop_server
                continue
            fi
            side="http://127.0.0.1:$sport"
            cli_args=(--endpoint "$side" --truth "$ep")
            if [[ "$backend" == pgconf ]]; then
                for want in "heartbeat_timeout=${hb}s" "hash_partition_exponent=$exp" "hash_ring_algorithm=$alg"; do
                    if ! grep -q "msg=starting .*$want" "$W/sidecar-$name.log"; then
                        echo "!! the sidecar did not take $want from the ironic.conf"
                        step_error "$cell"
                    fi
                done
            fi
        fi

        # the API took a few seconds to start: give the heartbeats their ages
        # again, relative to now, so the just-inside conductors are inside
        ipy "$ROOT" heartbeat --fleet "$WIN/fleet-$name.json" >/dev/null
        # the sidecar's view may be one read before those heartbeats (its
        # /readyz above refreshed it): compare must not meet it, or every
        # conductor's updated_at is older by the heartbeat step's duration.
        # A reader waits for a refresh only once the view is older than
        # --refresh.min-interval plus a second (a younger one is served
        # while the refresh it starts runs): 2 s here.
        [[ "$SIDECAR" == ironic ]] || sleep 2.1

        echo "=== $name: compare Ironic ($ep) vs $side"
        t0=$(date +%s)
        acc="$ACCEPT${ACCEPT:+,}$(accept_of "$rel")"
        acc="${acc%,}"
        "$PY" "$W/harness/ironic_fleet.py" compare --ironic "$ep" --sidecar "$side" \
            --fleet "$W/fleet-$name.json" ${acc:+--accept "$acc"} \
            >"$W/compare-$name.out" 2>&1
        show "$W/compare-$name.out"
        echo "    (compare: $(( $(date +%s) - t0 ))s)"
        count "$W/compare-$name.out" "$cell"
        if [[ "$SIDECAR" != ironic ]]; then
            det="$(grep -m1 -o 'msg="Ironic rules".*' "$W/sidecar-$name.log" || true)"
            echo "    sidecar: ${det:-(no release detection logged)}"
        fi

        if [[ "$backend" == pgconf && "$SIDECAR" != ironic ]]; then
            # Ironic's own _concurrent_action_limit per conductor group, on
            # the API's ironic.conf, vs the sidecar's headroom
            echo "=== $name: concurrency limits ($(limits_of "$rel")) and health"
            if ipy "$ROOT" limits --config-file "$WIN/log-$name/ironic-api-$port.conf" \
                    --fleet "$WIN/fleet-$name.json" --out "$WIN/limits-$name.json" \
                    >"$W/limits-ironic-$name.out" 2>&1; then
                "$PY" "$W/harness/ironic_fleet.py" limits-compare --sidecar "$side" \
                    --ironic "$ep" --limits "$W/limits-$name.json" >"$W/limits-$name.out" 2>&1
                show "$W/limits-$name.out"
                count "$W/limits-$name.out" "$cell"
            else
                tail -n 30 "$W/limits-ironic-$name.out"
                step_error "$cell"
            fi
        fi

        if [[ " $CLI_BACKENDS " == *" $backend "* ]]; then
            echo "=== $name: cli against $side"
            t0=$(date +%s)
            "$PY" "$W/harness/ironic_fleet.py" cli "${cli_args[@]}" \
                --fleet "$W/fleet-$name.json" --conductor-sample "$CLI_SAMPLE" \
                --node-sample "$CLI_SAMPLE" >"$W/cli-$name.out" 2>&1
            show "$W/cli-$name.out"
            echo "    (cli: $(( $(date +%s) - t0 ))s)"
            count "$W/cli-$name.out" "$cell"
        fi

        stop_server
        ipy "$ROOT" dropdb --db-url "$url" >/dev/null 2>&1 || true
        echo "=== $name took $(( $(date +%s) - SEED_START ))s"
    done
done

echo
echo "##### matrix (checks passed/failed; steps that could not run)"
printf '%-8s %-22s %-22s %-22s\n' release postgresql mysql sqlite
for rel in $RELEASES; do
    row=()
    for b in postgresql mysql sqlite; do
        c="$rel:$b"
        if [[ -n "${EXCLUDED[$c]:-}" ]]; then
            row+=("excluded")
        elif [[ -z "${CELL_PASS[$c]:-}${CELL_ERR[$c]:-}" ]]; then
            row+=("-")
        else
            v="${CELL_PASS[$c]:-0}/${CELL_FAIL[$c]:-0}"
            [[ -n "${CELL_ERR[$c]:-}" ]] && v+=" (${CELL_ERR[$c]} err)"
            row+=("$v")
        fi
    done
    printf '%-8s %-22s %-22s %-22s\n' "$rel" "${row[@]}"
done
for c in "${!EXCLUDED[@]}"; do echo "excluded $c: ${EXCLUDED[$c]}"; done
echo "conformance took $(( $(date +%s) - START ))s"
if (( STEP_ERRORS > 0 )); then
    echo "$STEP_ERRORS step(s) could not run"
    TOTAL_FAIL=$((TOTAL_FAIL + STEP_ERRORS))
fi
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
(( TOTAL_FAIL == 0 ))
