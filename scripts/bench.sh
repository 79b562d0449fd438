#!/usr/bin/env bash
# make bench: the performance contract (docs/performance.md), measured at
# 100k and 1M nodes, printed as one table (each figure, its target, what
# was measured and whether it meets it) and written into docs/performance.md.
#
#   - refresh: the load a refresh puts on Ironic's database (cmd
#     BenchmarkRefreshFloors: unchanged nodes cost the probe alone, one
#     changed node a delta read; the benchmark fails otherwise);
#   - read: a full node read (db BenchmarkNodeRead) next to the COPY of the
#     same rows to psql, in alternated rounds;
#   - scrape: the cold gzip scrape and the live heap (collector
#     BenchmarkFirstScrape, BenchmarkLiveHeap) at 100k and 1M nodes;
#   - steady: the binary on a real PostgreSQL fleet of 100k, then 1M nodes,
#     built before the fleet is filled: two "Prometheus replicas" scraping
#     gzip every 15 s, 10 lookups a second (and /healthz once a second, as
#     a kubelet probes), the conductors heartbeating
#     every 10 s; the nodes unchanged for STEADY_SECONDS, then 1% of them
#     changing per minute (a sixth of that every 10 s) for as long. The
#     sidecar's CPU comes from /proc/PID/stat over each phase, its peak RSS
#     from VmHWM, its live heap from the garbage collector's trace
#     (GODEBUG=gctrace=1: the heap marked live by each cycle), the node
#     reads from ironic_exporter_node_reads_total, the lookups' latency from
#     wrk (its slowest lookup: one held by a running refresh);
#   - lookup: p99 at 500 lookups a second with the default flags, on the
#     100k fleet;
#   - nova: the steady state again on the 100k fleet with Nova beside it
#     (100 ironic nova-computes heartbeating, instances on 72% of the
#     nodes), the exporter reading it with --nova.dsn;
#   - ironic: real Ironic 21.4's API (python3-ironic,
#     conformance/ironic_fleet.py serve) and the sidecar under wrk on one
#     IRONIC_NODES-node fleet;
#   - openstack (when OPENSTACK_EXPORTER names its binary): what operators
#     use today, openstack-exporter, scraping real Ironic 21.4's and Nova
#     26.2's APIs behind a real Keystone, beside the sidecar reading the
#     same databases (NOVA_NODES nodes, NOVA_COMPUTES ironic computes):
#     scrape time, CPU of every process a scrape makes work, PostgreSQL's
#     CPU and the rows it read.
#
# Needs PostgreSQL on 127.0.0.1:5432 (trust, user postgres) and psql,
# python3-ironic with python3-psycopg2 (Debian's /usr/bin/python3, or
# $ICE_PYTHON), and wrk (installed from Debian when missing); the
# openstack section Debian's keystone and the Nova chroot (make provision).
# About 25 minutes on the 2-core reference machine, without openstack.
#
# Environment (defaults in brackets):
#   ROUNDS [3]              alternated rounds of the node read and wrk phases
#   BENCHTIME [1s]          -test.benchtime of the timed Go benchmarks
#   STEADY_SECONDS [150]    length of each steady-state phase (unchanged, changing)
#   STEADY_SIZES [100000 1000000]  fleets of the steady state
#   LOOKUP_SECONDS [20]     length of the 500 lookups/s phase
#   IRONIC_WRK_SECONDS [8], IRONIC_ROUNDS [2], IRONIC_NODES [3000]
#   NOVA_NODES [100000], NOVA_COMPUTES [100]  the steady state with Nova,
#                           and the openstack section's fleet
#   OPENSTACK_EXPORTER []   an openstack-exporter binary, built from its
#                           source (its module is not on the Go module
#                           proxy); the openstack section runs when it is set
#   OPENSTACK_ROUNDS [1] (a scrape of openstack-exporter takes minutes), NOVA_CHROOT [the bookworm chroot of
#                           conformance/nova/chroots.sh: Nova 26.2]
#   SECTIONS [refresh read scrape steady nova ironic, and openstack when
#                           OPENSTACK_EXPORTER is set]  what to run (its rows
#                           only; the lookup rows come with steady)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

ROUNDS=${ROUNDS:-3}
BENCHTIME=${BENCHTIME:-1s}
STEADY_SECONDS=${STEADY_SECONDS:-150}
STEADY_SIZES=${STEADY_SIZES:-100000 1000000}
LOOKUP_SECONDS=${LOOKUP_SECONDS:-20}
IRONIC_WRK_SECONDS=${IRONIC_WRK_SECONDS:-8}
IRONIC_ROUNDS=${IRONIC_ROUNDS:-2}
IRONIC_NODES=${IRONIC_NODES:-3000}
SECTIONS=${SECTIONS:-refresh read scrape steady nova ironic${OPENSTACK_EXPORTER:+ openstack}}
NOVA_NODES=${NOVA_NODES:-100000}
NOVA_COMPUTES=${NOVA_COMPUTES:-100}
OPENSTACK_ROUNDS=${OPENSTACK_ROUNDS:-1}
NOVA_CHROOT=${NOVA_CHROOT:-${NOVA_CHROOT_CACHE:-/var/cache/ironic-conductor-exporter/nova-chroots}/bookworm}
PG=(-h 127.0.0.1 -U postgres)

out=$(mktemp -d /tmp/ice-bench.XXXXXX)
results=$out/results.tsv # name, unit, value: every benchmark line, in run order
: >"$results"
dbs=()
pids=()
cleanup() {
	local p d
	for p in "${pids[@]}"; do
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
	done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
	for d in "${dbs[@]}"; do
		psql -q "${PG[@]}" -d postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true
	done
	rm -rf "$out"
}
trap cleanup EXIT
phase() { printf '\n== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- tools ------------------------------------------------------------------
# The Python with Ironic: $ICE_PYTHON, else python3 from PATH or Debian's
# /usr/bin/python3, whichever imports ironic (a pyenv python3 may shadow it).
PYTHON=${ICE_PYTHON:-}
if [[ -z $PYTHON ]]; then
	for p in "$(command -v python3 || true)" /usr/bin/python3; do
		if [[ -n $p ]] && "$p" -c 'import ironic, psycopg2' 2>/dev/null; then PYTHON=$p && break; fi
	done
fi
[[ -n $PYTHON ]] || { echo "bench: no python3 imports ironic and psycopg2: apt-get install python3-ironic python3-psycopg2 (or set ICE_PYTHON)" >&2; exit 1; }
export PYTHON ICE_PYTHON=$PYTHON
apt_install() {
	# DPkg::Lock::Timeout waits for another apt run (a CI's) instead of failing.
	local apt=(apt-get -o DPkg::Lock::Timeout=3600 -qq)
	[[ $(id -u) == 0 ]] || apt=(sudo "${apt[@]}")
	echo "bench: installing $* from Debian" >&2
	"${apt[@]}" update && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "$@" >/dev/null
}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
command -v wrk >/dev/null || apt_install wrk
psql -q "${PG[@]}" -d postgres -c 'SELECT 1' >/dev/null || { echo "bench: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }

# --- results ----------------------------------------------------------------
rows=()
# row FIGURE TARGET MEASURED VERDICT
row() { rows+=("$(printf '| %s | %s | %s | %s |' "$@")"); }
# record: benchmark output on stdin, appended to $results as name, unit,
# value (the name without the -GOMAXPROCS and #NN suffixes).
record() {
	awk '/^Benchmark/ && NF >= 4 {
		name = $1; sub(/-[0-9]+$/, "", name); sub(/#[0-9]+$/, "", name)
		for (i = 3; i < NF; i += 2) printf "%s\t%s\t%s\n", name, $(i + 1), $i
	}' >>"$results"
}
# series NAME UNIT: the values of NAME in UNIT, in run order.
series() { awk -F'\t' -v n="$1" -v u="$2" '$1 == n && $2 == u { print $3 }' "$results"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
# ratios A B: A[i] / B[i] for two series files, one per line.
ratios() { paste "$1" "$2" | awk 'NF == 2 && $2 > 0 { print $1 / $2 }'; }
stats() { sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%.2fx / %.2fx / %.2fx (min / median / max, %d round%s)", a[1], a[int((NR + 1) / 2)], a[NR], NR, NR == 1 ? "" : "s"; else printf "no data" }'; }
# meets VALUE OP LIMIT: met when VALUE OP LIMIT holds.
meets() {
	[[ -n $1 ]] || { echo "NOT measured"; return; }
	awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { ok = (op == "<=") ? v <= l : (op == "<") ? v < l : v >= l; print ok ? "met" : "NOT met" }'
}
ms() { awk -v v="$1" 'BEGIN { if (v >= 1e9) printf "%.2f s", v / 1e9; else printf "%.1f ms", v / 1e6 }'; }

# gobench DIR BIN REGEX [ENV...]: one run of a test binary's benchmarks
# matching REGEX in package DIR, recorded; a failure or no benchmark at all
# ends the script.
gobench() {
	local dir=$1 bin=$2 re=$3 log=$out/run.txt
	shift 3
	if ! (cd "$dir" && env "$@" "$bin" -test.run '^$' -test.bench "$re" -test.benchtime "${GOBENCHTIME:-$BENCHTIME}") \
		>"$log" 2>"$log.err"; then
		echo "bench: $dir $re failed:" >&2
		tail -40 "$log" "$log.err" >&2
		exit 1
	fi
	grep '^Benchmark' "$log" >&2 || { echo "bench: $dir: no benchmark matches $re" >&2; exit 1; }
	record <"$log"
}

# --- build: every binary before any database is filled ----------------------
phase "building the exporter and the test binaries"
CGO_ENABLED=0 go build -trimpath -o "$out/exporter" ./cmd/ironic_conductor_exporter
for p in collector db cmd/ironic_conductor_exporter; do
	go test -c -o "$out/$(basename "$p").test" "./$p"
done

# --- refresh: what a refresh asks of Ironic's database -------------------------
if want refresh; then
	phase "refresh on PostgreSQL, 100k nodes (cmd BenchmarkRefreshFloors, $ROUNDS rounds in one process)"
	gobench cmd/ironic_conductor_exporter "$out/ironic_conductor_exporter.test" '^BenchmarkRefreshFloors$' ICE_BENCH_ROUNDS="$ROUNDS"
	b=BenchmarkRefreshFloors
	row "load on Ironic's database per refresh, 100k nodes (the benchmark fails if a refresh reads more)" \
		"unchanged: the probe alone; one node changed: the delta" \
		"unchanged: probe + conductors, $(ms "$(series $b/unchanged/nodes=100000 ns/op | median)") a refresh (the probe alone $(ms "$(series $b/probe/nodes=100000 ns/op | median)")); one node changed: the delta read, $(ms "$(series $b/delta/nodes=100000 ns/op | median)"); every node: $(ms "$(series $b/full/nodes=100000 ns/op | median)")" \
		met
fi

# --- read: the full node read against COPY ---------------------------------------
if want read; then
	phase "full node read vs COPY to psql (db BenchmarkNodeRead, $ROUNDS rounds in one process)"
	gobench db "$out/db.test" '^BenchmarkNodeRead$' ICE_BENCH_ROUNDS="$ROUNDS"
	series BenchmarkNodeRead/libpq/nodes=100000 ns/op >"$out/s"
	series BenchmarkNodeRead/copy/nodes=100000 ns/op >"$out/f"
	ratios "$out/s" "$out/f" >"$out/r"
	row "full node read, 100k nodes (lib/pq, db BenchmarkNodeRead)" "<= 2x psql COPY of the same rows" \
		"$(ms "$(median <"$out/s")") vs COPY $(ms "$(median <"$out/f")"): $(stats <"$out/r")" "$(meets "$(median <"$out/r")" '<=' 2)"
fi

# --- scrape: the cold gzip scrape and the live heap -----------------------------------
if want scrape; then
	phase "cold scrape and live heap at 100k and 1M nodes (collector BenchmarkFirstScrape, BenchmarkLiveHeap)"
	GOBENCHTIME=2x gobench collector "$out/collector.test" '^BenchmarkFirstScrape/gzip/'
	GOBENCHTIME=1x gobench collector "$out/collector.test" '^BenchmarkLiveHeap/nodes=(100000|1000000)$'
	for n in 100000 1000000; do
		limit=1e9 target="<= 1 s"
		[[ $n == 1000000 ]] && limit=5e9 target="<= 5 s"
		v=$(series "BenchmarkFirstScrape/gzip/nodes=$n" ns/op | median)
		row "one gzip scrape, cold, $n nodes (collector BenchmarkFirstScrape: order, render, compress)" "$target" \
			"$(ms "$v")" "$(meets "$v" '<=' "$limit")"
		h=$(series "BenchmarkLiveHeap/nodes=$n" B/node | median)
		row "live heap, $n nodes (collector BenchmarkLiveHeap: snapshot, topology, exposition)" "<= 600 B/node" \
			"$(printf '%.0f' "$h") B/node" "$(meets "$h" '<=' 600)"
	done
fi

# --- the binary on a real fleet ----------------------------------------------------------
freeport() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# newdb NAME NODES: an Ironic schema (Ironic's migrations) with the bench
# fleet of scripts/bench-fleet.sql.
newdb() {
	dbs+=("$1")
	PGOPTIONS=--client-min-messages=warning psql -q "${PG[@]}" -d postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" \
		-c "CREATE DATABASE $1" >/dev/null
	scripts/ironic-schema.sh "postgresql+psycopg2://postgres@127.0.0.1/$1" >"$out/schema.log" 2>&1 ||
		{ tail -20 "$out/schema.log" >&2; exit 1; }
	psql -q "${PG[@]}" -d "$1" -v nodes="$2" -f scripts/bench-fleet.sql >/dev/null
}
heartbeat() { psql -q "${PG[@]}" -d "$1" -c "UPDATE conductors SET updated_at = now() AT TIME ZONE 'utc'" >/dev/null; }
# for_ironic_api DB: the fleet in DB as Ironic's objects layer writes it and
# its API needs it (conformance/fleet.py): the object versions; sets
# ironic_release.
for_ironic_api() {
	local node_v cond_v
	read -r node_v cond_v < <("$PYTHON" -c 'from ironic import objects; objects.register_all(); print(objects.Node.VERSION, objects.Conductor.VERSION)')
	psql -q "${PG[@]}" -d "$1" -c "UPDATE nodes SET version = '$node_v', console_enabled = false" \
		-c "UPDATE conductors SET version = '$cond_v'" >/dev/null
	ironic_release=$("$PYTHON" -c 'from ironic import version; print(version.version_info.release_string())')
}
# start_exporter VAR DB ARGS...: runs the binary on DB (its process group
# recorded for the cleanup, its stderr in $out/exporter.$port.log), sets VAR
# to its base URL once it is ready.
start_exporter() {
	local var=$1 db=$2 port i
	shift 2
	port=$(freeport)
	GODEBUG=gctrace=1 setsid "$out/exporter" --db.dsn "postgresql://postgres@127.0.0.1/$db?sslmode=disable" \
		--web.listen-address "127.0.0.1:$port" --log.level warn "$@" >"$out/exporter.$port.log" 2>&1 &
	pids+=($!)
	for i in $(seq 600); do curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.2; done
	printf -v "$var" 'http://127.0.0.1:%s' "$port"
}
# assert_fresh URL CONDUCTORS: every conductor of the sidecar at URL alive.
assert_fresh() {
	curl -fs -H 'X-Prometheus-Scrape-Timeout-Seconds: 30' "$1/metrics" >"$out/metrics.txt"
	local alive dead
	alive=$(grep -c '^ironic_conductor_alive{.*} 1$' "$out/metrics.txt" || true)
	dead=$(grep -c '^ironic_conductor_alive{.*} 0$' "$out/metrics.txt" || true)
	[[ $dead == 0 && $alive == "$2" ]] ||
		{ echo "bench: $1: $alive of $2 conductors alive ($dead not): the figures would measure a stale fleet" >&2; exit 1; }
}
# assert_ironic_fresh URL CONDUCTORS: every conductor alive in Ironic's API.
assert_ironic_fresh() {
	curl -fs -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1/v1/conductors" >"$out/conductors.json"
	local alive
	alive=$(grep -o '"alive": *true' "$out/conductors.json" | wc -l)
	[[ $alive == "$2" ]] || { echo "bench: Ironic at $1: $alive of $2 conductors alive: stale fleet" >&2; exit 1; }
}
# wrk_at URL SECONDS CONNS DELAY_MS [REPORT]: wrk on URL, each connection
# waiting DELAY_MS between requests (a rate of CONNS*1000/DELAY_MS a
# second); its report in REPORT ($out/wrk.txt). Its Lua script is its own
# (REPORT.lua): two wrk started at once on one file could read it
# truncated, and a script without delay() runs flat out. A non-2xx answer,
# or a rate over the one asked, ends the script.
wrk_at() {
	local report=${5:-$out/wrk.txt} rate
	printf 'function delay() return %d end\n' "$4" >"$report.lua"
	wrk -t1 -c"$3" -d"$2s" --timeout 10s --latency -s "$report.lua" -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1" >"$report"
	if grep -q 'Non-2xx\|Socket errors' "$report"; then
		echo "bench: wrk $1 got errors:" >&2
		cat "$report" >&2
		exit 1
	fi
	rate=$(awk '/Requests\/sec/ { print $2 }' "$report")
	if [[ $(meets "$rate" '<=' "$(awk -v c="$3" -v d="$4" 'BEGIN { print c * 1200 / d }')") != met ]]; then
		echo "bench: wrk $1 ran at $rate requests/s, asked $(($3 * 1000 / $4)): the figures would measure another load" >&2
		cat "$report" >&2
		exit 1
	fi
}
# wrk_ms FIELD [REPORT]: a latency of a wrk report ($out/wrk.txt) in ms
# (FIELD: 99% or Max).
wrk_ms() {
	awk -v f="$1" '
		function ms(s) { if (s ~ /us$/) return s / 1000; if (s ~ /ms$/) return s + 0; if (s ~ /m$/) return s * 60000; return s * 1000 }
		f == "Max" && $1 == "Latency" && NF >= 4 { print ms($4); exit }
		f != "Max" && $1 == f { print ms($2); exit }' "${2:-$out/wrk.txt}"
}
# rps URL SECONDS CONNS: requests per second of wrk on URL, flat out.
rps() {
	wrk -t2 -c"$3" -d"$2s" --timeout 60s -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1" >"$out/wrk.txt"
	if grep -q 'Non-2xx' "$out/wrk.txt"; then
		echo "bench: wrk $1 got errors:" >&2
		cat "$out/wrk.txt" >&2
		exit 1
	fi
	awk '/Requests\/sec/ { print $2 }' "$out/wrk.txt"
}
# cpu_ticks PID: user + system CPU of PID, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# sys_ticks PID: system CPU of PID (page faults, madvise, I/O), in clock ticks.
sys_ticks() { awk '{ print $15 }' "/proc/$1/stat"; }
# gc_cycles LOG: the garbage collections the exporter's trace has logged.
gc_cycles() { grep -c '^gc ' "$1" || true; }
# pct TICKS SECONDS: CPU ticks over a phase as a percentage of one core.
pct() { awk -v c="$1" -v t="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", 100 * c / hz / t }'; }
# steady N [nova]: the steady state on an N-node fleet; the lookup rows at
# 100k. With nova, Nova beside it (scripts/bench-nova.sql: NOVA_COMPUTES
# ironic nova-computes heartbeating every 10 s as Nova's report_state does,
# instances on 72% of the nodes), read with --nova.dsn: the rows say "with
# Nova".
steady() {
	local n=$1 nova=${2:-} db=ice_bench_steady_$$_$1${2:+_nova} base pid bg=() t0 c0 t1 c1 t2 c2 i with="" flags=()
	phase "steady state, $n nodes${nova:+ with Nova}: filling the fleet (the binary was built first)"
	newdb "$db" "$n"
	if [[ -n $nova ]]; then
		local novadsn="postgresql://postgres@127.0.0.1/$db?sslmode=disable"
		PGOPTIONS=--client-min-messages=warning psql -q "${PG[@]}" -d "$db" -v computes="$NOVA_COMPUTES" -v cell="'$novadsn'" \
			-f scripts/bench-nova.sql >/dev/null
		flags=(--nova.dsn "$novadsn")
		with=", with Nova ($NOVA_COMPUTES ironic computes)"
	fi
	start_exporter base "$db" "${flags[@]}"
	pid=${pids[-1]}
	heartbeat "$db"
	assert_fresh "$base" 300
	uuid=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	lookup="$base/v1/nodes/$uuid/conductor"
	curl -fs -H 'X-OpenStack-Ironic-API-Version: 1.49' "$lookup" | grep -q '"hostname"' ||
		{ echo "bench: $lookup does not name a conductor" >&2; exit 1; }
	# The conductors heartbeat every 10 s, as Ironic's do (and the
	# nova-computes, as Nova's report_state).
	(while :; do
		heartbeat "$db"
		[[ -z $nova ]] || psql -q "${PG[@]}" -d "$db" -c "UPDATE services SET last_seen_up = now() AT TIME ZONE 'utc', updated_at = now() AT TIME ZONE 'utc'" >/dev/null
		sleep 10
	done) &
	bg+=($!)
	if [[ -n $nova ]]; then
		for i in $(seq 60); do
			curl -fs -H 'X-Prometheus-Scrape-Timeout-Seconds: 30' "$base/metrics" >"$out/metrics.txt"
			[[ $(grep -c '^ironic_node_nova_compute_info{' "$out/metrics.txt") -ge $n &&
				$(grep -c '^ironic_nova_compute_up{.*} 1$' "$out/metrics.txt") == "$NOVA_COMPUTES" ]] && break
			[[ $i == 60 ]] && { echo "bench: the sidecar does not answer the Nova side of $n nodes and $NOVA_COMPUTES computes" >&2; exit 1; }
			sleep 1
		done
	fi
	# Two Prometheus replicas, 7.5 s apart, each scraping gzip every 15 s;
	# each scrape's time in $out/scrapes.
	: >"$out/scrapes"
	for i in 0 1; do
		(sleep "$((i * 15 / 2)).$((i * 5))"
			while :; do
				curl -fs -o /dev/null -H 'Accept-Encoding: gzip' -H 'X-Prometheus-Scrape-Timeout-Seconds: 10' \
					-w '%{time_total}\n' "$base/metrics" >>"$out/scrapes" || echo fail >>"$out/scrapes"
				sleep 15
			done) &
		bg+=($!)
	done
	reads() { curl -fs --compressed "$base/metrics" | awk '/^ironic_exporter_node_reads_total/ { printf "%s ", $0 }'; }
	local log=$out/exporter.${base##*:}.log gc0 gc1 gc2 s0 s1 s2 n0 n1 n2 limit=2 target="<= 2% of one core"
	[[ $n == 1000000 ]] && limit=20 target="<= 20% of one core"
	phase "steady state, $n nodes: the database unchanged for ${STEADY_SECONDS} s, 10 lookups/s"
	sleep 20 # past the first scrapes of the new fleet
	t0=$SECONDS c0=$(cpu_ticks "$pid") s0=$(sys_ticks "$pid") gc0=$(wc -l <"$log") n0=$(gc_cycles "$log")
	# /healthz once a second beside the lookups, as a kubelet probes (every
	# 10 s by default): the same server's latency without the topology, what
	# the machine's load alone costs. The load is the contract's: 10
	# lookups a second.
	wrk_at "$base/healthz" "$STEADY_SECONDS" 1 1000 "$out/healthz.txt" &
	hz_pid=$!
	wrk_at "$lookup" "$STEADY_SECONDS" 1 100
	wait "$hz_pid"
	t1=$SECONDS c1=$(cpu_ticks "$pid") s1=$(sys_ticks "$pid") gc1=$(wc -l <"$log") n1=$(gc_cycles "$log")
	quiet_max=$(wrk_ms Max) quiet_p99=$(wrk_ms 99%) quiet_hz=$(wrk_ms Max "$out/healthz.txt")
	phase "steady state, $n nodes: 1% of the nodes changing per minute for ${STEADY_SECONDS} s, 10 lookups/s"
	reads_before=$(reads)
	# A sixth of 1% every 10 s: the power state and updated_at, as Ironic's
	# update_node writes them.
	(k=0
		while :; do
			psql -q "${PG[@]}" -d "$db" -c "UPDATE nodes SET power_state = CASE power_state WHEN 'power on' THEN 'power off' ELSE 'power on' END,
				updated_at = now() AT TIME ZONE 'utc' WHERE id % 600 = $k" >/dev/null
			k=$(((k + 1) % 600))
			sleep 10
		done) &
	bg+=($!)
	wrk_at "$base/healthz" "$STEADY_SECONDS" 1 1000 "$out/healthz.txt" &
	hz_pid=$!
	wrk_at "$lookup" "$STEADY_SECONDS" 1 100
	wait "$hz_pid"
	t2=$SECONDS c2=$(cpu_ticks "$pid") s2=$(sys_ticks "$pid") gc2=$(wc -l <"$log") n2=$(gc_cycles "$log")
	change_max=$(wrk_ms Max) change_p99=$(wrk_ms 99%) change_hz=$(wrk_ms Max "$out/healthz.txt")
	reads_after=$(reads)
	kill "${bg[@]}" 2>/dev/null || true
	wait "${bg[@]}" 2>/dev/null || true
	assert_fresh "$base" 300
	grep -q fail "$out/scrapes" && { echo "bench: a scrape failed" >&2; exit 1; }
	local cpu_quiet cpu_change rss live scrape_max
	cpu_quiet=$(pct "$((c1 - c0))" "$((t1 - t0))")
	cpu_change=$(pct "$((c2 - c1))" "$((t2 - t1))")
	row "sidecar CPU, steady state, $n nodes$with: database unchanged ($((t1 - t0)) s)" "$target" \
		"${cpu_quiet}% (system $(pct "$((s1 - s0))" "$((t1 - t0))")%; $((n1 - n0)) GC cycles)" "$(meets "$cpu_quiet" '<=' "$limit")"
	row "sidecar CPU, steady state, $n nodes$with: 1% of the nodes changing per minute ($((t2 - t1)) s)" "$target" \
		"${cpu_change}% (system $(pct "$((s2 - s1))" "$((t2 - t1))")%; $((n2 - n1)) GC cycles)" "$(meets "$cpu_change" '<=' "$limit")"
	if [[ $(meets "$cpu_quiet" '<=' "$limit") != met || $(meets "$cpu_change" '<=' "$limit") != met ]]; then
		# What the collector did meanwhile, for whoever reads why.
		echo "bench: CPU over target at $n nodes; the exporter's GC trace over both phases:" >&2
		sed -n "$((gc0 + 1)),${gc2}p" "$log" | tail -200 >&2
	fi
	scrape_max=$(sort -g "$out/scrapes" | tail -1)
	row "gzip scrapes of the binary, $n nodes$with, steady state (slowest of $(wc -l <"$out/scrapes"), a change included)" \
		"cold <= $([[ $n == 1000000 ]] && echo 5 || echo 1) s" "median $(median <"$out/scrapes") s, slowest ${scrape_max} s" \
		"$(meets "$scrape_max" '<=' "$([[ $n == 1000000 ]] && echo 5 || echo 1)")"
	full=$(echo "$reads_after" | grep -o 'kind="full"} [0-9]*' | awk '{ print $2 }')
	full0=$(echo "$reads_before" | grep -o 'kind="full"} [0-9]*' | awk '{ print $2 }')
	if [[ -n $nova ]]; then
		local nreads
		nreads=$(curl -fs --compressed "$base/metrics" | awk '/^ironic_exporter_nova_table_reads_total/ { printf "%s ", $0 }')
		row "Nova's tables while its rows do not change ($((t2 - t0)) s, a read every 15 s)" \
			"compute_nodes and instances read once, then their probes alone" "${nreads//ironic_exporter_nova_table_reads_total/}" \
			"$(echo "$nreads" | awk '{ for (i = 1; i < NF; i += 2) if ($i ~ /kind="read"/ && $(i + 1) > 2) bad = 1 } END { print bad ? "NOT met" : "met" }')"
	fi
	row "node reads while 1% of $n nodes$with change per minute ($((t2 - t1)) s; --refresh.full-interval 10m)" \
		"the delta; at most one full read per full-interval" \
		"before: ${reads_before//ironic_exporter_node_reads_total/}; after: ${reads_after//ironic_exporter_node_reads_total/}" \
		"$(meets "$((full - full0))" '<=' "$(((t2 - t1) / 600 + 1))")"
	rss=$(awk '/VmHWM/ { print $2 * 1024 }' "/proc/$pid/status")
	# the contract: 600 B/node, 800 with the Nova side configured
	local heap_max=600
	[[ -n $nova ]] && heap_max=800
	# The live heap: the least a GC cycle of the unchanged phase marked
	# ("A->B->C MB": C), one that no refresh's transient garbage swelled
	# (the refreshes there read the probe alone).
	live=$(sed -n "$((gc0 + 1)),${gc1}p" "$log" | grep -o '[0-9]*->[0-9]*->[0-9]* MB' | awk -F'->' '{ print $3 + 0 }' | sort -g | head -1)
	live=$((${live:-0} * 1048576))
	row "memory of the binary, $n nodes$with: live heap (the least a GC cycle marked, database unchanged), peak RSS (VmHWM), refreshes included" \
		"live heap <= $heap_max B/node; peak RSS <= 2x the live heap" \
		"live $(awk -v l="$live" -v n="$n" 'BEGIN { printf "%.0f MB, %.0f B/node", l / 1048576, l / n }'); peak RSS $(awk -v r="$rss" -v l="$live" 'BEGIN { printf "%.0f MB, %.2fx", r / 1048576, r / l }')" \
		"$(awk -v l="$live" -v r="$rss" -v n="$n" -v m="$heap_max" 'BEGIN { print (l / n <= m && r <= 2 * l) ? "met" : "NOT met" }')"
	row "lookup held by a running refresh, $n nodes$with (10 lookups/s; the slowest of each phase, and the slowest /healthz at 1/s beside it)" "none over 50 ms" \
		"unchanged: slowest ${quiet_max} ms (p99 ${quiet_p99}, /healthz slowest ${quiet_hz}); changing: slowest ${change_max} ms (p99 ${change_p99}, /healthz slowest ${change_hz})" \
		"$(meets "$(printf '%s\n%s\n' "$quiet_max" "$change_max" | sort -g | tail -1)" '<' 50)"
	if [[ $n == 100000 && -z $nova ]]; then
		phase "lookups at 500/s with the default flags, $n nodes, ${LOOKUP_SECONDS} s"
		wrk_at "$lookup" "$LOOKUP_SECONDS" 10 20
		row "lookup GET /v1/nodes/{uuid}/conductor at 500 requests/s, default flags, $n nodes (wrk)" "p99 < 5 ms" \
			"p99 $(wrk_ms 99%) ms at $(awk '/Requests\/sec/ { printf "%.0f", $2 }' "$out/wrk.txt") req/s" "$(meets "$(wrk_ms 99%)" '<' 5)"
	fi
	kill -TERM -- "-$pid" 2>/dev/null || true
	psql -q "${PG[@]}" -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
}
if want steady; then
	for n in $STEADY_SIZES; do steady "$n"; done
fi
if want nova; then
	steady "$NOVA_NODES" nova
fi

# --- ironic: real Ironic's API on the same fleet ----------------------------------------
if want ironic; then
	phase "real Ironic's API vs the sidecar on one ${IRONIC_NODES}-node fleet, $IRONIC_ROUNDS rounds"
	ironicdb=ice_bench_ironic_$$
	newdb "$ironicdb" "$IRONIC_NODES"
	for_ironic_api "$ironicdb"
	iport=$(freeport)
	# Ironic's defaults where they matter: hash_ring_reset_interval 15 s, two API workers (the cores).
	(cd conformance && exec setsid "$PYTHON" ironic_fleet.py serve --db-url "postgresql+psycopg2://postgres@127.0.0.1/$ironicdb" \
		--port "$iport" --heartbeat-timeout 60 --hash-ring-reset-interval 15 --workers 2 --log-dir "$out/ironic" \
		--no-request-log >"$out/ironic.log" 2>&1) &
	pids+=($!)
	ironic=http://127.0.0.1:$iport
	for _ in $(seq 120); do curl -fs -o /dev/null "$ironic/" && break; sleep 1; done
	curl -fs -o /dev/null "$ironic/" || { echo "bench: Ironic's API did not start" >&2; tail -20 "$out/ironic.log" >&2; exit 1; }
	start_exporter sidecar "$ironicdb"
	uuids() { curl -fs -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1" | awk '{ n += gsub(/"uuid"/, "") } END { print n + 0 }'; }
	all_fresh() { assert_fresh "$sidecar" 300 && assert_ironic_fresh "$ironic" 300; }
	heartbeat "$ironicdb"
	all_fresh
	inode=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	ihost=$(grep -m1 -o 'conductor="conductor-[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	paths=("/v1/nodes/$inode?fields=uuid,conductor" "/v1/nodes/$inode/conductor" /v1/conductors "/v1/nodes?conductor=$ihost" /v1/nodes/detail)
	labels=("a node's conductor as Ironic answers it, GET /v1/nodes/{uuid}?fields=uuid,conductor"
		"a node's conductor, the sidecar's GET /v1/nodes/{uuid}/conductor vs Ironic's GET /v1/nodes/{uuid}?fields=uuid,conductor"
		"GET /v1/conductors" "GET /v1/nodes?conductor=X" "GET /v1/nodes/detail (a page of 1,000)")
	# Ironic has no /v1/nodes/{uuid}/conductor: the second row's Ironic side is the first's.
	ironic_path=("${paths[0]}" "${paths[0]}" "${paths[2]}" "${paths[3]}" "${paths[4]}")
	for i in "${!paths[@]}"; do : >"$out/ir.$i" && : >"$out/sc.$i"; done
	for r in $(seq "$IRONIC_ROUNDS"); do
		for i in "${!paths[@]}"; do
			for who in ir sc; do
				[[ $who == ir && $i == 1 ]] && continue
				case $who in ir) url=$ironic${ironic_path[$i]} ;; sc) url=$sidecar${paths[$i]} ;; esac
				heartbeat "$ironicdb"
				all_fresh
				v=$(rps "$url" "$IRONIC_WRK_SECONDS" 4)
				all_fresh
				echo "$v" >>"$out/$who.$i"
				echo "  round $r: $who ${paths[$i]}: $v req/s" >&2
			done
		done
	done
	cp "$out/ir.0" "$out/ir.1"
	for i in "${!paths[@]}"; do
		ratios "$out/sc.$i" "$out/ir.$i" >"$out/r"
		row "lookup vs Ironic $ironic_release: ${labels[$i]} (${IRONIC_NODES} nodes, same database, wrk)" ">= 50x" \
			"sidecar $(median <"$out/sc.$i") req/s, Ironic $(median <"$out/ir.$i") req/s: $(stats <"$out/r")" \
			"$(meets "$(median <"$out/r")" '>=' 50)"
	done
fi

# --- openstack: what operators use today, on the same fleet ---------------------------
# openstack-exporter scraping real Ironic 21.4's and real Nova's APIs behind a
# real Keystone (scripts/bench-openstack.py, scripts/bench-nova-api.py in the
# Nova chroot), and the sidecar reading the same databases, on one
# NOVA_NODES-node fleet with NOVA_COMPUTES ironic nova-computes. Alternated
# rounds, the other exporter stopped (SIGSTOP) meanwhile: one scrape of
# openstack-exporter against one 15 s scrape interval of the sidecar (its
# refreshes included). CPU from /proc of every process the scrape makes work
# (openstack-exporter, ironic-api, nova-api, keystone) and of PostgreSQL
# (its live processes, and the postmaster's reaped children); rows read from
# pg_stat_database over the Ironic and Nova databases.
if want openstack; then
	phase "openstack-exporter and the sidecar on one $NOVA_NODES-node fleet, $NOVA_COMPUTES ironic nova-computes, $OPENSTACK_ROUNDS rounds"
	[[ -n ${OPENSTACK_EXPORTER:-} && -x $OPENSTACK_EXPORTER ]] || {
		echo "bench: SECTIONS has openstack: OPENSTACK_EXPORTER must name an openstack-exporter binary (docs/performance.md)" >&2
		exit 1
	}
	[[ -f $NOVA_CHROOT/.nova-conformance-ready ]] ||
		{ echo "bench: no Nova chroot at $NOVA_CHROOT: conformance/nova/chroots.sh bookworm" >&2; exit 1; }
	osdb=ice_bench_os_$$
	newdb "$osdb" "$NOVA_NODES"
	for_ironic_api "$osdb"
	# instances on 72% of the nodes, as scripts/bench-nova.sql puts them
	psql -q "${PG[@]}" -d "$osdb" -c "UPDATE nodes SET instance_uuid = md5('instance-' || id)::uuid::text WHERE id % 100 < 72" >/dev/null
	# Nova 26.2's schema by its own nova-manage, its rows as its objects
	# write them, its API as nova-api serves it: from the chroot.
	# nova-api's api-paste.ini is nova-common's, which the chroot does not
	# install (it brings dbconfig-common and its questions): the file is
	# taken from the package.
	if [[ ! -f $NOVA_CHROOT/etc/nova/api-paste.ini ]]; then
		chroot "$NOVA_CHROOT" sh -c 'cd /tmp && apt-get -qq update && apt-get -qq download nova-common &&
			dpkg-deb -x nova-common_*.deb /tmp/nova-common && mkdir -p /etc/nova &&
			cp /tmp/nova-common/usr/share/nova-common/api-paste.ini /etc/nova/ && rm -rf nova-common_*.deb /tmp/nova-common' >/dev/null ||
			{ echo "bench: no api-paste.ini for nova-api: nova-common could not be fetched into $NOVA_CHROOT" >&2; exit 1; }
	fi
	nw=/tmp/ice-bench-nova-$$
	mkdir -p "$NOVA_CHROOT$nw"
	cp scripts/bench-nova-api.py "$NOVA_CHROOT$nw/"
	novapy=(chroot "$NOVA_CHROOT" /usr/bin/python3 "$nw/bench-nova-api.py")
	novaprefix=${osdb}_nova
	dbs+=("${novaprefix}_api" "${novaprefix}_cell0" "${novaprefix}_cell1")
	"${novapy[@]}" schema --prefix "$novaprefix" --workdir "$nw" >"$out/nova-schema.log" 2>&1 ||
		{ tail -20 "$out/nova-schema.log" >&2; exit 1; }
	"${novapy[@]}" fill --prefix "$novaprefix" --workdir "$nw" --ironic-db "$osdb" --computes "$NOVA_COMPUTES" >"$out/nova-fill.log" 2>&1 ||
		{ tail -20 "$out/nova-fill.log" >&2; exit 1; }
	kport=$(freeport) iport=$(freeport) nport=$(freeport) oport=$(freeport)
	keystone=http://127.0.0.1:$kport/v3
	ksdb=${osdb}_keystone
	dbs+=("$ksdb")
	"$PYTHON" scripts/bench-openstack.py keystone --db "$ksdb" --dir "$out/keystone" --port "$kport"
	setsid keystone-wsgi-public --host 127.0.0.1 --port "$kport" -- --config-file "$out/keystone/keystone.conf" >"$out/keystone.log" 2>&1 &
	pids+=($!) && kpid=$!
	for _ in $(seq 60); do curl -fs -o /dev/null "$keystone" && break; sleep 1; done
	"$PYTHON" scripts/bench-openstack.py register --keystone "$keystone" --baremetal "http://127.0.0.1:$iport" \
		--compute "http://127.0.0.1:$nport/v2.1" --clouds "$out/clouds.yaml"
	"$PYTHON" scripts/bench-openstack.py ironic-conf --conf "$out/ironic-keystone.conf" \
		--db-url "postgresql+psycopg2://postgres@127.0.0.1/$osdb" --port "$iport" --keystone "$keystone"
	setsid "$PYTHON" scripts/bench-openstack.py ironic --conf "$out/ironic-keystone.conf" >"$out/ironic-keystone.log" 2>&1 &
	pids+=($!) && ipid=$!
	setsid "${novapy[@]}" serve --prefix "$novaprefix" --workdir "$nw" --port "$nport" --keystone "$keystone" \
		--user nova --password novapw --project service --workers 2 >"$out/nova-api.log" 2>&1 &
	pids+=($!) && npid=$!
	for _ in $(seq 120); do curl -s -o /dev/null "http://127.0.0.1:$iport/" && curl -s -o /dev/null "http://127.0.0.1:$nport/" && break; sleep 1; done
	# The conductors and the nova-computes heartbeat every 10 s (Nova's
	# report_state writes these two columns).
	(while :; do
		heartbeat "$osdb"
		psql -q "${PG[@]}" -d "${novaprefix}_cell1" -c "UPDATE services SET last_seen_up = now() AT TIME ZONE 'utc', updated_at = now() AT TIME ZONE 'utc'" >/dev/null
		sleep 10
	done) &
	osbg=$!
	# openstack-exporter as its README runs it, on the services this
	# compares: baremetal and compute (identity's metrics are Keystone's).
	setsid "$OPENSTACK_EXPORTER" --os-client-config "$out/clouds.yaml" --web.listen-address "127.0.0.1:$oport" \
		--disable-service.identity bench >"$out/openstack-exporter.log" 2>&1 &
	pids+=($!) && opid=$!
	start_exporter sidecar "$osdb" --nova.dsn "postgresql://postgres@127.0.0.1/${novaprefix}_api?sslmode=disable"
	spid=${pids[-1]}
	heartbeat "$osdb"
	assert_fresh "$sidecar" 300
	# pg CPU: the postmaster's reaped children and every live process.
	pmaster=$(pgrep -o -u postgres -x postgres)
	pgticks() {
		local t=0 p
		for p in $(pgrep -u postgres -x postgres); do
			t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
		done
		echo $((t + $(awk '{ print $16 + $17 }' "/proc/$pmaster/stat")))
	}
	treeticks() { # PGID: CPU ticks of a process group's live processes
		local t=0 p
		for p in $(pgrep -g "$1"); do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
		echo "$t"
	}
	dbrows() {
		psql -Atq "${PG[@]}" -d postgres -c "SELECT sum(tup_returned + tup_fetched), sum(xact_commit + xact_rollback)
			FROM pg_stat_database WHERE datname IN ('$osdb', '${novaprefix}_api', '${novaprefix}_cell0', '${novaprefix}_cell1')" | tr '|' ' '
	}
	# snap: the counters, one line (the statistics of idle backends reach
	# pg_stat_database within PostgreSQL's 10 s idle interval: waited for)
	snap() { sleep 11; echo "$SECONDS $(treeticks "$opid") $(treeticks "$ipid") $(treeticks "$npid") $(treeticks "$kpid") $(cpu_ticks "$spid") $(pgticks) $(dbrows)"; }
	: >"$out/os.ose" && : >"$out/os.side"
	hz=$(getconf CLK_TCK)
	for r in $(seq "$OPENSTACK_ROUNDS"); do
		kill -STOP "$spid"
		s0=$(snap)
		t=$(curl -fs -o "$out/ose.txt" --max-time 1800 -w '%{time_total}' "http://127.0.0.1:$oport/metrics") ||
			{ echo "bench: openstack-exporter's scrape failed" >&2; tail -20 "$out/openstack-exporter.log" >&2; exit 1; }
		s1=$(snap)
		kill -CONT "$spid"
		kill -STOP "$opid"
		# Back in its steady state first: the refreshes it missed while
		# stopped (a full read of the nodes, Nova's tables) are not a
		# scrape interval's.
		for i in $(seq 10); do (assert_fresh "$sidecar" 300 2>/dev/null) && break; sleep 1; done
		assert_fresh "$sidecar" 300
		sleep 30
		curl -fs -o /dev/null -H 'Accept-Encoding: gzip' "$sidecar/metrics"
		s2=$(snap)
		ts=$(curl -fs -o /dev/null -H 'Accept-Encoding: gzip' -H 'X-Prometheus-Scrape-Timeout-Seconds: 10' -w '%{time_total}' "$sidecar/metrics")
		sleep 15
		s3=$(snap)
		kill -CONT "$opid"
		# time, CPU s (exporter, ironic-api, nova-api, keystone, PostgreSQL), rows, transactions
		echo "$t $s0 $s1" | awk -v hz="$hz" '{ printf "%s %.2f %.2f %.2f %.2f %.2f %d %d\n", $1, ($12-$3)/hz, ($13-$4)/hz, ($14-$5)/hz, ($15-$6)/hz, ($17-$8)/hz, $18-$9, $19-$10 }' >>"$out/os.ose"
		# the sidecar's counters per 15 s of its phase (the phase lasts about 26 s: the waits of snap)
		echo "$ts $s2 $s3" | awk -v hz="$hz" '{ k = 15 / ($11 - $2); printf "%s %.2f 0 0 0 %.2f %d %d\n", $1, k * ($16-$7)/hz, k * ($17-$8)/hz, k * ($18-$9), k * ($19-$10) }' >>"$out/os.side"
		echo "  round $r: openstack-exporter $(tail -1 "$out/os.ose"); sidecar $(tail -1 "$out/os.side")" >&2
	done
	kill "$osbg" 2>/dev/null || true
	kill -TERM -- "-$npid" 2>/dev/null || true
	rm -rf "${NOVA_CHROOT:?}$nw"
	col() { awk -v c="$1" '{ print $c }' "$2" | median; }
	ironic_series=$(grep -c '^openstack_ironic_node{' "$out/ose.txt" || true)
	nova_up=$(awk '/^openstack_nova_up / { print $2 }' "$out/ose.txt")
	ironic_up=$(awk '/^openstack_ironic_up / { print $2 }' "$out/ose.txt")
	curl -fs --compressed "$sidecar/metrics" >"$out/side.txt"
	ose_version=$("$OPENSTACK_EXPORTER" --version 2>&1 | sed -n '1s/.*version \([^ ]*\) .*/\1/p')
	row "openstack-exporter ${ose_version:-(version unknown)} on real Ironic $ironic_release's and Nova 26.2's APIs behind Keystone, one scrape, $NOVA_NODES nodes, $NOVA_COMPUTES ironic computes (median of $OPENSTACK_ROUNDS, alternated)" \
		"(what operators use today)" \
		"$(col 1 "$out/os.ose") s; CPU s: exporter $(col 2 "$out/os.ose"), ironic-api $(col 3 "$out/os.ose"), nova-api $(col 4 "$out/os.ose"), keystone $(col 5 "$out/os.ose"), PostgreSQL $(col 6 "$out/os.ose"); $(col 7 "$out/os.ose") rows read in $(col 8 "$out/os.ose") transactions; openstack_ironic_up $ironic_up, openstack_nova_up $nova_up, $ironic_series ironic nodes exported of $NOVA_NODES, $(grep -c '^openstack_nova_agent_state{' "$out/ose.txt" || true) nova agents, no node's conductor or nova-compute" \
		"(comparison)"
	row "the sidecar on the same databases, one 15 s scrape interval (its refreshes and one gzip scrape; median of $OPENSTACK_ROUNDS, alternated)" \
		"(beside it)" \
		"scrape $(col 1 "$out/os.side") s; CPU s: sidecar $(col 2 "$out/os.side"), PostgreSQL $(col 6 "$out/os.side"); $(col 7 "$out/os.side") rows read in $(col 8 "$out/os.side") transactions; $(grep -c '^ironic_node_conductor_info{' "$out/side.txt") nodes' conductors, $(grep -c '^ironic_node_nova_compute_info{' "$out/side.txt") nodes' nova-computes, $(grep -c '^ironic_nova_compute_up{.*} 1$' "$out/side.txt") nova-computes up" \
		"(comparison)"
fi

# --- the table ------------------------------------------------------------------------
# Printed, and written into docs/performance.md between its two markers.
header="make bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo -dirty), sections: $SECTIONS, took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
table=$(printf '| figure | target | measured | meets it |\n|---|---|---|---|\n'; printf '%s\n' "${rows[@]}")
echo
echo "$header"
echo
echo "$table"
doc=docs/performance.md
if grep -q '^<!-- make bench: begin -->$' "$doc" && grep -q '^<!-- make bench: end -->$' "$doc"; then
	{
		sed '/^<!-- make bench: begin -->$/q' "$doc"
		printf '```\n%s\n```\n\n%s\n' "$header" "$table"
		sed -n '/^<!-- make bench: end -->$/,$p' "$doc"
	} >"$doc.tmp" && mv "$doc.tmp" "$doc"
	echo "bench: the table is in $doc"
else
	echo "bench: $doc has no make bench markers: the table is not written" >&2
fi
