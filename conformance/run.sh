#!/usr/bin/env bash
# Conformance of the sidecar against real Ironic 21.4 (make conformance):
# for each case (a backend and a seed): setup -> serve Ironic's API
# (background) -> start the sidecar on the same database -> heartbeat ->
# compare Ironic vs the sidecar -> the stock baremetal CLI against the
# sidecar -> drop the database. Prints a final "N passed, M failed" line
# summed over every step.
#
# Usage: conformance/run.sh [SIDECAR_BINARY]
#   With no binary (or "ironic") it is the harness' self-check: Ironic is
#   compared with itself and the CLI runs against Ironic.
#
# Environment:
#   CASES      BACKEND:SEED ... to run (default "postgresql:1 postgresql:2
#              mysql:3 sqlite:4 pgconf:5"). Backends:
#                postgresql  PGURL, sidecar given --db.dsn and
#                            --ironic.heartbeat-timeout
#                mysql       MYURL (MariaDB/MySQL through pymysql)
#                sqlite      a file under the work directory
#                            (sqlite:////tmp/...), Ironic unpatched: the
#                            sidecar tells the release from the database
#                pgconf      PostgreSQL with hash_ring_algorithm = sha256,
#                            hash_partition_exponent = 7,
#                            heartbeat_timeout = 30, which the sidecar learns
#                            only from --ironic.config-file (the ironic.conf
#                            the Ironic API uses)
#   SEEDS      shorthand: PostgreSQL only, these seeds (when CASES is unset)
#   BACKENDS   keep only the cases of these backends (e.g. "mysql sqlite")
#   PGURL      server URL without database (default
#              postgresql+psycopg2://postgres@127.0.0.1)
#   MYURL      MariaDB/MySQL server URL without database (default
#              mysql+pymysql://root@127.0.0.1)
#   KEEP=1     keep databases and logs
#   CLI_SAMPLE conductors/nodes sampled by the cli step (default 3)
#   ACCEPT     known differences compare reports as NOTEs instead of
#              failures (comma-separated; see README.md), default
#              "node-conductor-below-1.49,conductor-filter-limit"
#   SHOW_LINES lines of each step's output shown (default 120)
set -u -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3            # Debian's python: has python3-ironic
FLEET="$HERE/ironic_fleet.py"
if [[ -z "${CASES:-}" && -n "${SEEDS:-}" ]]; then
    CASES=""
    for s in $SEEDS; do CASES+="postgresql:$s "; done
fi
CASES="${CASES:-postgresql:1 postgresql:2 mysql:3 sqlite:4 pgconf:5}"
if [[ -n "${BACKENDS:-}" ]]; then
    kept=""
    for c in $CASES; do
        for b in $BACKENDS; do [[ "${c%%:*}" == "$b" ]] && kept+="$c "; done
    done
    CASES="$kept"
fi
SIDECAR="${1:-ironic}"
[[ "$SIDECAR" == ironic || "$SIDECAR" == */* ]] || SIDECAR="./$SIDECAR"
[[ "$SIDECAR" == ironic || -x "$SIDECAR" ]] || { echo "no executable sidecar at $SIDECAR" >&2; exit 2; }
PGURL="${PGURL:-postgresql+psycopg2://postgres@127.0.0.1}"
MYURL="${MYURL:-mysql+pymysql://root@127.0.0.1}"
CLI_SAMPLE="${CLI_SAMPLE:-3}"
# The sidecar's deliberate differences from Ironic 21.4 (see api/doc.go):
# the spec's 404 below 1.49 on /v1/nodes/{node}/conductor, and ?conductor=
# applied before pagination. Set ACCEPT= (empty) to see them fail.
ACCEPT="${ACCEPT-node-conductor-below-1.49,conductor-filter-limit}"
SHOW_LINES="${SHOW_LINES:-120}"
WORK="$(mktemp -d /tmp/ironic-conformance.XXXXXX)"
DBPREFIX="ironic_conformance_$$_"

SERVE_PID=""
SIDECAR_PID=""
DBS=()
TOTAL_PASS=0
TOTAL_FAIL=0
STEP_ERRORS=0

stop_server() {
    if [[ -n "$SERVE_PID" ]] && kill -0 "$SERVE_PID" 2>/dev/null; then
        # serve runs in its own session (setsid): its pid is the group id;
        # the group holds oslo.service's launcher and its API workers.
        kill -TERM -- "-$SERVE_PID" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$SERVE_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$SERVE_PID" 2>/dev/null
    fi
    SERVE_PID=""
    if [[ -n "$SIDECAR_PID" ]]; then
        kill -TERM "$SIDECAR_PID" 2>/dev/null
        wait "$SIDECAR_PID" 2>/dev/null
    fi
    SIDECAR_PID=""
}

cleanup() {
    local rc=$?
    stop_server
    if [[ "${KEEP:-0}" != 1 ]]; then
        for db in "${DBS[@]}"; do
            "$PY" "$FLEET" dropdb --db-url "$db" >/dev/null 2>&1 || true
        done
        rm -rf "$WORK"
    else
        echo "kept: $WORK and databases ${DBS[*]:-}"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_ready URL PID TRIES INTERVAL: until URL answers 2xx, while PID lives.
wait_ready() {
    for _ in $(seq "$3"); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep "$4"
    done
    return 1
}

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# add the "N passed, M failed" of a step's output to the totals
count() {
    local line
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)"
    if [[ -z "$line" ]]; then
        echo "!! no summary line in $1"
        STEP_ERRORS=$((STEP_ERRORS + 1))
        return
    fi
    TOTAL_PASS=$((TOTAL_PASS + $(awk '{print $1}' <<<"$line")))
    TOTAL_FAIL=$((TOTAL_FAIL + $(awk '{print $3}' <<<"$line")))
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

START=$(date +%s)
for case in $CASES; do
    backend="${case%%:*}"
    seed="${case#*:}"
    SEED_START=$(date +%s)
    db="${DBPREFIX}${backend}_${seed}"
    hb=60
    serve_args=()
    compare_args=()
    case "$backend" in
    postgresql) url="$PGURL/$db" ;;
    mysql)      url="$MYURL/$db" ;;
    sqlite)     url="sqlite:///$WORK/$db.sqlite" ;;
    pgconf)     url="$PGURL/$db"
                hb=30
                serve_args=(--hash-partition-exponent 7 --hash-ring-algorithm sha256)
                compare_args=(--hash-partition-exponent 7 --hash-ring-algorithm sha256) ;;
    *)          echo "!! unknown backend in CASES: $case"
                STEP_ERRORS=$((STEP_ERRORS + 1))
                continue ;;
    esac
    seed="$backend-$seed"   # names the case's files
    DBS+=("$url")
    echo "=== seed $seed: setup ($url)"
    if ! "$PY" "$FLEET" setup --db-url "$url" --seed "${case#*:}" \
            --heartbeat-timeout "$hb" --out "$WORK/fleet-$seed.json" \
            >"$WORK/setup-$seed.out" 2>&1; then
        cat "$WORK/setup-$seed.out"
        STEP_ERRORS=$((STEP_ERRORS + 1))
        continue
    fi
    grep -E '^  "(cond|Cond)' "$WORK/setup-$seed.out" | sed 's/^ */    /'

    port="$(free_port)"
    echo "=== seed $seed: serve on 127.0.0.1:$port"
    setsid "$PY" "$FLEET" serve --db-url "$url" --port "$port" \
        --heartbeat-timeout "$hb" --log-dir "$WORK/log-$seed" "${serve_args[@]}" \
        >"$WORK/serve-$seed.out" 2>&1 &
    SERVE_PID=$!
    if ! wait_ready "http://127.0.0.1:$port/" "$SERVE_PID" 120 0.5; then
        echo "!! Ironic API did not come up"; cat "$WORK/serve-$seed.out"
        tail -50 "$WORK/log-$seed"/ironic-api-*.log 2>/dev/null
        STEP_ERRORS=$((STEP_ERRORS + 1))
        stop_server
        continue
    fi
    ep="http://127.0.0.1:$port"

    side="$ep"
    cli_args=(--endpoint "$ep" --ironic-endpoint)
    if [[ "$SIDECAR" != ironic ]]; then
        sport="$(free_port)"
        echo "=== seed $seed: sidecar on 127.0.0.1:$sport"
        if [[ "$backend" == pgconf ]]; then
            # everything from the ironic.conf the Ironic API runs with
            side_args=(--ironic.config-file "$WORK/log-$seed/ironic-api-$port.conf")
        else
            side_args=(--db.dsn "$url" --ironic.heartbeat-timeout "${hb}s")
        fi
        IRONIC_EXPORTER_DB_DSN= "$SIDECAR" "${side_args[@]}" \
            --refresh.min-interval 1s --web.listen-address "127.0.0.1:$sport" \
            >"$WORK/sidecar-$seed.log" 2>&1 &
        SIDECAR_PID=$!
        if ! wait_ready "http://127.0.0.1:$sport/readyz" "$SIDECAR_PID" 100 0.1; then
            echo "!! sidecar did not become ready"; cat "$WORK/sidecar-$seed.log"
            STEP_ERRORS=$((STEP_ERRORS + 1))
            stop_server
            continue
        fi
        side="http://127.0.0.1:$sport"
        cli_args=(--endpoint "$side" --truth "$ep")
        if [[ "$backend" == pgconf ]]; then
            for want in heartbeat_timeout=30s hash_partition_exponent=7 hash_ring_algorithm=sha256; do
                if ! grep -q "msg=starting .*$want" "$WORK/sidecar-$seed.log"; then
                    echo "!! the sidecar did not take $want from the ironic.conf"
                    STEP_ERRORS=$((STEP_ERRORS + 1))
                fi
            done
        fi
    fi

    # the API took a few seconds to start: give the heartbeats their ages
    # again, relative to now, so the just-inside conductors are inside
    "$PY" "$FLEET" heartbeat --fleet "$WORK/fleet-$seed.json" >/dev/null

    echo "=== seed $seed: compare Ironic ($ep) vs $side"
    t0=$(date +%s)
    "$PY" "$FLEET" compare --ironic "$ep" --sidecar "$side" \
        --fleet "$WORK/fleet-$seed.json" ${ACCEPT:+--accept "$ACCEPT"} \
        "${compare_args[@]}" >"$WORK/compare-$seed.out" 2>&1
    show "$WORK/compare-$seed.out"
    echo "    (compare: $(( $(date +%s) - t0 ))s)"
    count "$WORK/compare-$seed.out"

    echo "=== seed $seed: cli against $side"
    t0=$(date +%s)
    "$PY" "$FLEET" cli "${cli_args[@]}" \
        --fleet "$WORK/fleet-$seed.json" --conductor-sample "$CLI_SAMPLE" \
        --node-sample "$CLI_SAMPLE" >"$WORK/cli-$seed.out" 2>&1
    show "$WORK/cli-$seed.out"
    echo "    (cli: $(( $(date +%s) - t0 ))s)"
    count "$WORK/cli-$seed.out"

    stop_server
    "$PY" "$FLEET" dropdb --db-url "$url" >/dev/null 2>&1 || true
    echo "=== seed $seed took $(( $(date +%s) - SEED_START ))s"
done

echo "conformance took $(( $(date +%s) - START ))s"
if (( STEP_ERRORS > 0 )); then
    echo "$STEP_ERRORS step(s) could not run"
    TOTAL_FAIL=$((TOTAL_FAIL + STEP_ERRORS))
fi
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
(( TOTAL_FAIL == 0 ))
