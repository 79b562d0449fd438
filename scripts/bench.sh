#!/usr/bin/env bash
# make bench: every figure of issue 12 next to its floor, measured in the
# same run, printed as one table.
#
# Subjects and floors are Go benchmarks (or wrk phases) run in alternated
# rounds, subject, floor, subject, floor..., so that the shared machine's
# load hits both alike; the table prints the min / median / max of the
# per-round ratio, and whether the median meets the target:
#   - cheap test binaries (collector, api) run once per round;
#   - the db and cmd test binaries, whose TestMain runs Ironic's migrations,
#     run once with ICE_BENCH_ROUNDS (internal/bench): the benchmark repeats
#     its sub-benchmarks itself, subject then floor, and Go names the
#     repeats NAME#01, NAME#02...;
#   - the CPU-bound /metrics and lookup ratios are also counted in
#     instructions (valgrind --tool=callgrind), which a loaded 2-core
#     machine does not disturb: the count of each benchmark's timed loop
#     only (dumps at testing.B's ResetTimer and StopTimer), divided by its
#     iterations.
# Then the exporter binary, built BEFORE its database is filled, is measured
# under wrk on a 100k-node PostgreSQL fleet, and next to real Ironic 21.4's
# API (python3-ironic, conformance/ironic_fleet.py serve) on one 3,000-node
# fleet, the heartbeats of each fleet refreshed before every wrk phase and
# asserted fresh (every conductor alive) before and after it.
#
# Needs PostgreSQL on 127.0.0.1:5432 (trust, user postgres), python3-ironic
# with python3-psycopg2 (Debian's /usr/bin/python3, or $ICE_PYTHON), wrk and
# valgrind (installed from Debian when missing, waiting for the dpkg lock).
#
# Environment (defaults in brackets):
#   ROUNDS [5]          alternated rounds of the Go benchmarks and wrk phases
#   HEAVY_ROUNDS [3]    rounds of the 1M-node benchmarks
#   BENCHTIME [1s]      -test.benchtime of the timed Go benchmarks
#   CG_ITERS [20]       iterations of each /metrics benchmark under callgrind, 2000x that for the
#                       lookups (0: skip callgrind)
#   WRK_SECONDS [5]     length of a wrk phase against the sidecar alone
#   IRONIC_WRK_SECONDS [10]  length of a wrk phase of the Ironic comparison
#   IRONIC_ROUNDS [3]   rounds of the Ironic comparison
#   FLEET_NODES [100000], IRONIC_NODES [3000]
#   SECTIONS [refresh read metrics heap api wrk scale ironic]  what to run (its rows only)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

ROUNDS=${ROUNDS:-5}
HEAVY_ROUNDS=${HEAVY_ROUNDS:-3}
BENCHTIME=${BENCHTIME:-1s}
CG_ITERS=${CG_ITERS:-20}
WRK_SECONDS=${WRK_SECONDS:-5}
IRONIC_WRK_SECONDS=${IRONIC_WRK_SECONDS:-10}
IRONIC_ROUNDS=${IRONIC_ROUNDS:-3}
FLEET_NODES=${FLEET_NODES:-100000}
IRONIC_NODES=${IRONIC_NODES:-3000}
SECTIONS=${SECTIONS:-refresh read metrics heap api wrk scale ironic}
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
if want wrk || want ironic; then command -v wrk >/dev/null || apt_install wrk; fi
if [[ $CG_ITERS != 0 ]] && { want metrics || want api; }; then command -v valgrind >/dev/null || apt_install valgrind; fi
psql -q "${PG[@]}" -d postgres -c 'SELECT 1' >/dev/null || { echo "bench: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }

# --- results ----------------------------------------------------------------
rows=()
# row FIGURE NOW FLOOR RATIOS TARGET VERDICT
row() { rows+=("$(printf '| %s | %s | %s | %s | %s | %s |' "$@")"); }
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
# names REGEX: the distinct benchmark names matching REGEX, in run order.
names() { awk -F'\t' -v r="$1" '$1 ~ r && !seen[$1]++ { print $1 }' "$results"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
# ratios A B: A[i] / B[i] for two series files, one per line.
ratios() { paste "$1" "$2" | awk 'NF == 2 && $2 > 0 { print $1 / $2 }'; }
stats() { sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%.2fx / %.2fx / %.2fx (%d round%s)", a[1], a[int((NR + 1) / 2)], a[NR], NR, NR == 1 ? "" : "s"; else printf "no data" }'; }
# verdict OP LIMIT RATIOS-FILE: whether the median ratio meets OP LIMIT.
verdict() {
	local m
	m=$(median <"$3")
	[[ -n $m ]] || { echo "not measured"; return; }
	awk -v m="$m" -v op="$1" -v l="$2" 'BEGIN { ok = (op == "<=") ? m <= l : m >= l; print ok ? "met" : "NOT met" }'
}
human() { # a value and its unit, readable
	awk -v v="$1" -v u="$2" 'BEGIN {
		if (v == "") { print "-"; exit }
		if (u == "ns/op") { if (v >= 1e9) printf "%.2f s", v / 1e9; else if (v >= 1e6) printf "%.1f ms", v / 1e6; else if (v >= 1e3) printf "%.1f µs", v / 1e3; else printf "%.0f ns", v }
		else if (u == "Ir/op") { if (v >= 1e9) printf "%.2f G Ir", v / 1e9; else if (v >= 1e6) printf "%.1f M Ir", v / 1e6; else if (v >= 1e3) printf "%.1f k Ir", v / 1e3; else printf "%.0f Ir", v }
		else printf "%.4g %s", v, u }'
}
# pair FIGURE SUBJECT FLOOR UNIT OP LIMIT [inverse]: a row of SUBJECT / FLOOR
# (FLOOR / SUBJECT with "inverse": a throughput ratio from times) per round;
# OP "none": no target, the ratio is reported.
pair() {
	local fig=$1 s=$2 f=$3 unit=$4 op=$5 lim=$6 inv=${7:-}
	series "$s" "$unit" >"$out/s"
	series "$f" "$unit" >"$out/f"
	if [[ $inv == inverse ]]; then ratios "$out/f" "$out/s" >"$out/r"; else ratios "$out/s" "$out/f" >"$out/r"; fi
	local what=${s#Benchmark} fwhat=${f#Benchmark} target="$op ${lim}x" met
	if [[ $op == none ]]; then target="none: reported" met=-; else met=$(verdict "$op" "$lim" "$out/r"); fi
	row "$fig" "$(human "$(median <"$out/s")" "$unit") (${what})" "$(human "$(median <"$out/f")" "$unit") (${fwhat})" \
		"$(stats <"$out/r")" "$target" "$met"
}

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
# rounds N DIR BIN REGEX: N alternated rounds, one process each.
rounds() {
	local n=$1 r
	shift
	for r in $(seq "$n"); do
		echo "  round $r/$n" >&2
		gobench "$@"
	done
}

# heap_linear FIGURE BIG SMALL: the row of BenchmarkLiveHeap's B/node at BIG
# nodes against SMALL nodes (linear: ~1x).
heap_linear() {
	series "BenchmarkLiveHeap/nodes=$2" B/node >"$out/s"
	series "BenchmarkLiveHeap/nodes=$3" B/node >"$out/f"
	ratios "$out/s" "$out/f" >"$out/r"
	row "$1" "$(median <"$out/s") B/node" "$(median <"$out/f") B/node" \
		"$(stats <"$out/r")" "linear (~1x, <= 1.2x)" "$(verdict '<=' 1.2 "$out/r")"
}

# callgrind DIR BIN REGEX ITERS: the instruction counts of the timed loop of each
# benchmark matching REGEX, recorded as NAME Ir/op. Callgrind dumps its
# counts at every entry of testing.(*B).ResetTimer and StopTimer: a dump at
# a StopTimer right after a ResetTimer holds one timed loop (b.Loop, or the
# b.N loop of runN), taken on every thread (the HTTP server's goroutines
# included). Go's asynchronous preemption signals trip callgrind, hence
# asyncpreemptoff; the garbage collector is off (GOGC=off): its cycles,
# whose cost is that of the whole live heap (the 100k-node topology), land on
# whichever iterations they fall on and would swamp the floors' counts (the
# timed runs above pay for them, and report B/op).
callgrind() {
	local dir=$1 bin=$2 re=$3 iters=$4 cg=$out/cg.$RANDOM
	mkdir -p "$cg"
	(cd "$dir" && GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind -q --callgrind-out-file="$cg/out" \
		--dump-before='testing.(*B).ResetTimer' --dump-before='testing.(*B).StopTimer' \
		"$bin" -test.run '^$' -test.bench "$re" -test.benchtime "${iters}x") >"$cg/stdout" 2>"$cg/stderr" ||
		{ echo "bench: callgrind of $re failed:" >&2; tail -20 "$cg/stderr" >&2; return 1; }
	local f
	for f in $(cd "$cg" && ls out.* | sort -t. -k2 -n); do
		awk '/^desc: Trigger:/ { t = ($0 ~ /ResetTimer/) ? "R" : ($0 ~ /StopTimer/) ? "S" : "E" } /^totals:/ { print t, $2 }' "$cg/$f"
	done | awk 'prev == "R" && $1 == "S" { print $2 } { prev = $1 }' >"$cg/loops"
	# A b.N benchmark runs two loops (run1's single iteration, then N); a
	# b.Loop benchmark one.
	grep '^Benchmark' "$cg/stdout" | awk '{ n = $1; sub(/-[0-9]+$/, "", n); print n, $2 }' >"$cg/benches"
	local nl nb
	nl=$(wc -l <"$cg/loops") nb=$(wc -l <"$cg/benches")
	if ((nb == 0 || (nl != nb && nl != 2 * nb))); then
		echo "bench: callgrind of $re: $nl timed loops for $nb benchmarks" >&2
		return 1
	fi
	if ((nl == 2 * nb)); then awk 'NR % 2 == 0' "$cg/loops" >"$cg/l" && mv "$cg/l" "$cg/loops"; fi
	paste -d' ' "$cg/benches" "$cg/loops" | awk '{ printf "%s\tIr/op\t%.0f\n", $1, $3 / $2; printf "  %s: %.0f instructions per iteration (callgrind, %d iterations)\n", $1, $3 / $2, $2 > "/dev/stderr" }' >>"$results"
}

# callgrind_diff DIR BIN ITERS BENCH...: the instructions per iteration of
# each benchmark BENCH, recorded as BENCH Ir/op: callgrind counts the whole
# process at ITERS and at 2*ITERS iterations, and the difference is divided
# by ITERS, so that everything but the iterations (the fixture, the first
# run, RunParallel's start) cancels out. The dumps at ResetTimer and
# StopTimer (callgrind above) do not always fire once per call in these
# RunParallel benchmarks (seen: an extra or a missing StopTimer), which made
# their counts pair up wrongly. GOMAXPROCS=1: one goroutine runs the
# iterations, and no thread spins on a lock its peer holds while valgrind
# runs the other (those spins are counted instructions).
callgrind_diff() {
	local dir=$1 bin=$2 iters=$3 cg=$out/cgd.$RANDOM b n
	shift 3
	mkdir -p "$cg"
	for b in "$@"; do
		for n in "$iters" $((2 * iters)); do
			(cd "$dir" && GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind -q --callgrind-out-file="$cg/$n.out" \
				"$bin" -test.run '^$' -test.bench "^$b\$" -test.benchtime "${n}x") >"$cg/stdout" 2>"$cg/stderr" ||
				{ echo "bench: callgrind of $b failed:" >&2; tail -20 "$cg/stderr" >&2; return 1; }
			grep -q "^$b[ -]" "$cg/stdout" || { echo "bench: callgrind: $b did not run" >&2; cat "$cg/stdout" >&2; return 1; }
		done
		awk -v b="$b" -v n="$iters" 'FNR == 1 { f++ } /^totals:/ { t[f] = $2 }
			END { v = (t[2] - t[1]) / n; printf "%s\tIr/op\t%.0f\n", b, v
				printf "  %s: %.0f instructions per iteration (callgrind, %d iterations more)\n", b, v, n > "/dev/stderr" }' \
			"$cg/$iters.out" "$cg/$((2 * iters)).out" >>"$results"
	done
}

# --- build: every binary before any database is filled ----------------------
phase "building the exporter and the test binaries"
CGO_ENABLED=0 go build -trimpath -o "$out/exporter" ./cmd/ironic_conductor_exporter
for p in collector api db cmd/ironic_conductor_exporter; do
	go test -c -o "$out/$(basename "$p").test" "./$p"
done
nodes=100000

# --- refresh: the cache against its floors ------------------------------------
if want refresh; then
	phase "cache refresh vs its floors (PostgreSQL, $nodes nodes, $ROUNDS rounds in one process)"
	gobench cmd/ironic_conductor_exporter "$out/ironic_conductor_exporter.test" '^BenchmarkRefreshFloors$' ICE_BENCH_ROUNDS="$ROUNDS"
	pair "refresh, database unchanged (Cache on PostgreSQL) vs the change probe alone" \
		"BenchmarkRefreshFloors/unchanged/nodes=$nodes" "BenchmarkRefreshFloors/probe/nodes=$nodes" ns/op '<=' 2
	pair "refresh, one node changed (Cache: delta read + topology) vs the change probe alone" \
		"BenchmarkRefreshFloors/delta/nodes=$nodes" "BenchmarkRefreshFloors/probe/nodes=$nodes" ns/op none 0
	pair "refresh, one node changed (Cache: delta read + topology) vs COPY" \
		"BenchmarkRefreshFloors/delta/nodes=$nodes" "BenchmarkRefreshFloors/copy/nodes=$nodes" ns/op '<=' 1.3
	pair "refresh, database changed (Cache: full read + topology) vs COPY" \
		"BenchmarkRefreshFloors/full/nodes=$nodes" "BenchmarkRefreshFloors/copy/nodes=$nodes" ns/op '<=' 1.3
fi

# --- read: the snapshot's full node read against COPY ---------------------------
if want read; then
	phase "full node read vs COPY (db BenchmarkNodeRead, $ROUNDS rounds in one process)"
	gobench db "$out/db.test" '^BenchmarkNodeRead$' ICE_BENCH_ROUNDS="$ROUNDS"
	# Every driver the benchmark has (copy is the floor).
	copy=$(names '^BenchmarkNodeRead/copy/' | head -1)
	# (alternated is the driver cases in turns, not a driver)
	for s in $(names '^BenchmarkNodeRead/' | grep -v -e '/copy/' -e '/alternated/'); do
		pair "full node read (db), ${s#BenchmarkNodeRead/} vs COPY" "$s" "$copy" ns/op '<=' 1.3
	done
fi

# --- metrics: /metrics against the same bytes from memory ----------------------
if want metrics; then
	phase "/metrics vs the same bytes from memory (collector BenchmarkMetrics, $nodes nodes, $ROUNDS rounds)"
	rounds "$ROUNDS" collector "$out/collector.test" '^BenchmarkMetrics$'
	pair "/metrics plain vs the same bytes from memory" \
		"BenchmarkMetrics/identity/nodes=$nodes" "BenchmarkMetrics/identity-floor/nodes=$nodes" ns/op '<=' 3
	pair "/metrics gzip vs the same bytes pre-compressed" \
		"BenchmarkMetrics/gzip/nodes=$nodes" "BenchmarkMetrics/gzip-floor/nodes=$nodes" ns/op '<=' 5
	if [[ $CG_ITERS != 0 ]]; then
		phase "/metrics in instructions (callgrind, $CG_ITERS iterations each)"
		callgrind collector "$out/collector.test" '^BenchmarkMetrics$' "$CG_ITERS"
		pair "/metrics plain vs the same bytes from memory, instructions (callgrind)" \
			"BenchmarkMetrics/identity/nodes=$nodes" "BenchmarkMetrics/identity-floor/nodes=$nodes" Ir/op '<=' 3
		pair "/metrics gzip vs the same bytes pre-compressed, instructions (callgrind)" \
			"BenchmarkMetrics/gzip/nodes=$nodes" "BenchmarkMetrics/gzip-floor/nodes=$nodes" Ir/op '<=' 5
	fi
fi

# --- heap: live heap per node ---------------------------------------------------
if want heap; then
	phase "live heap (collector BenchmarkLiveHeap, 10k, 100k, 1M nodes, $HEAVY_ROUNDS rounds)"
	GOBENCHTIME=1x rounds "$HEAVY_ROUNDS" collector "$out/collector.test" '^BenchmarkLiveHeap$'
	for n in 10000 100000 1000000; do
		series "BenchmarkLiveHeap/nodes=$n" B/node >"$out/h"
		# B/node-with-plain: while the plain exposition is kept too (it may not be).
		series "BenchmarkLiveHeap/nodes=$n" B/node-with-plain >"$out/hp"
		now="$(median <"$out/h") B/node"
		[[ -s $out/hp ]] && now="$now ($(median <"$out/hp") with the plain exposition cached too)"
		awk '{ print $1 / 400 }' "$out/h" >"$out/r"
		row "live heap, $n nodes (collector BenchmarkLiveHeap)" "$now" "the exposition: ~182 B/node plain, ~27 gzip" \
			"$(stats <"$out/r") of the target" "<= 400 B/node" "$(verdict '<=' 1 "$out/r")"
	done
	heap_linear "live heap linear: B/node at 1M vs 10k" 1000000 10000
fi

# --- lookups ----------------------------------------------------------------------
if want api; then
	phase "lookups (api): a node's conductor vs a trivial handler, alone and behind the server's chain; a page on 100k vs 10k nodes, $ROUNDS rounds"
	lookups=(BenchmarkNodeConductor BenchmarkTrivialHandler BenchmarkNodeConductorChain BenchmarkChainFloor)
	rounds "$ROUNDS" api "$out/api.test" "^($(IFS='|'; echo "${lookups[*]}")|BenchmarkNodePage)\$"
	pair "lookup /v1/nodes/{uuid}/conductor vs a trivial handler, in-process (api), throughput" \
		BenchmarkNodeConductor BenchmarkTrivialHandler ns/op '>=' 0.9 inverse
	pair "lookup behind the server's chain (limiter, auth, version, request id) vs a trivial resource behind the same chain, in-process (api), throughput" \
		BenchmarkNodeConductorChain BenchmarkChainFloor ns/op '>=' 0.9 inverse
	pair "the chain alone: a trivial resource behind it vs a trivial handler, in-process (api), throughput" \
		BenchmarkChainFloor BenchmarkTrivialHandler ns/op none 0 inverse
	allocs=()
	for b in "${lookups[@]}"; do
		allocs+=("${b#Benchmark} $(series "$b" allocs/op | median) ($(series "$b" B/op | median) B)")
	done
	row "allocations per request, in-process (api), median" "$(IFS=';'; echo "${allocs[*]}" | sed 's/;/; /g')" "-" "-" "-" "-"
	if [[ $CG_ITERS != 0 ]]; then
		phase "lookups in instructions (callgrind, by difference)"
		callgrind_diff api "$out/api.test" $((CG_ITERS * 2000)) "${lookups[@]}"
		pair "lookup /v1/nodes/{uuid}/conductor vs a trivial handler, in-process (api), instructions (callgrind), per request" \
			BenchmarkNodeConductor BenchmarkTrivialHandler Ir/op '>=' 0.9 inverse
		pair "lookup behind the server's chain vs a trivial resource behind the same chain, in-process (api), instructions (callgrind), per request" \
			BenchmarkNodeConductorChain BenchmarkChainFloor Ir/op '>=' 0.9 inverse
		pair "the chain alone vs a trivial handler, in-process (api), instructions (callgrind), per request" \
			BenchmarkChainFloor BenchmarkTrivialHandler Ir/op none 0 inverse
		# RunParallel's loops do not always pair up under callgrind (seen:
		# 10 timed loops for 6 sub-benchmarks); the rows then say so.
		cg_pages=1
		callgrind api "$out/api.test" '^BenchmarkNodePage$' $((CG_ITERS * 50)) || cg_pages=0
	fi
	for c in conductor conductor-after-marker detail-after-marker; do
		pair "a page of 50 nodes ($c), 100k-node fleet vs 10k (api)" \
			"BenchmarkNodePage/$c/nodes=100000" "BenchmarkNodePage/$c/nodes=10000" ns/op '<=' 1.2
		if [[ $CG_ITERS != 0 && $cg_pages == 1 ]]; then
			pair "a page of 50 nodes ($c), 100k-node fleet vs 10k (api), instructions (callgrind)" \
				"BenchmarkNodePage/$c/nodes=100000" "BenchmarkNodePage/$c/nodes=10000" Ir/op '<=' 1.2
		elif [[ $CG_ITERS != 0 ]]; then
			row "a page of 50 nodes ($c), 100k-node fleet vs 10k (api), instructions (callgrind)" \
				"not counted in this run (callgrind's timed loops did not pair up)" "-" "-" "<= 1.2x" "NOT measured"
		fi
	done
fi

# --- the binary under wrk -----------------------------------------------------------
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
# start_exporter VAR DB ARGS...: runs the binary on DB (its process group
# recorded for the cleanup), sets VAR to its base URL once it is ready.
start_exporter() {
	local var=$1 db=$2 port i
	shift 2
	port=$(freeport)
	setsid "$out/exporter" --db.dsn "postgresql://postgres@127.0.0.1/$db?sslmode=disable" \
		--web.listen-address "127.0.0.1:$port" --log.level warn "$@" >>"$out/exporter.log" 2>&1 &
	pids+=($!)
	for i in $(seq 300); do curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.2; done
	printf -v "$var" 'http://127.0.0.1:%s' "$port"
}
# assert_fresh URL CONDUCTORS: every conductor of the sidecar at URL alive.
assert_fresh() {
	curl -fs -H 'X-Prometheus-Scrape-Timeout-Seconds: 20' "$1/metrics" >"$out/metrics.txt"
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
# rps URL SECONDS CONNS: requests per second of wrk on URL; a non-2xx
# answer ends the script.
rps() {
	wrk -t2 -c"$3" -d"$2s" --timeout 60s -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1" >"$out/wrk.txt"
	if grep -q 'Non-2xx' "$out/wrk.txt"; then
		echo "bench: wrk $1 got errors:" >&2
		cat "$out/wrk.txt" >&2
		exit 1
	fi
	awk '/Requests\/sec/ { print $2 }' "$out/wrk.txt"
}

if want wrk; then
	phase "the binary on a ${FLEET_NODES}-node PostgreSQL fleet (built first, then the database), wrk, $ROUNDS rounds"
	fleetdb=ice_bench_fleet_$$
	newdb "$fleetdb" "$FLEET_NODES"
	start_exporter base "$fleetdb"
	exporter_pid=${pids[-1]}
	heartbeat "$fleetdb"
	assert_fresh "$base" 300
	uuid=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	lookup="$base/v1/nodes/$uuid/conductor"
	curl -fs -H 'X-OpenStack-Ironic-API-Version: 1.49' "$lookup" | grep -q '"hostname"' ||
		{ echo "bench: $lookup does not name a conductor" >&2; exit 1; }
	: >"$out/t" && : >"$out/l"
	for r in $(seq "$ROUNDS"); do
		for what in t l; do
			heartbeat "$fleetdb"
			assert_fresh "$base" 300
			if [[ $what == t ]]; then url=$base/healthz; else url=$lookup; fi
			v=$(rps "$url" "$WRK_SECONDS" 32)
			assert_fresh "$base" 300
			echo "$v" >>"$out/$what"
			echo "  round $r: $url: $v req/s" >&2
		done
	done
	ratios "$out/l" "$out/t" >"$out/r"
	row "lookup GET /v1/nodes/{uuid}/conductor, the binary under wrk (${FLEET_NODES} nodes)" "$(median <"$out/l") req/s" \
		"$(median <"$out/t") req/s (/healthz, same server)" "$(stats <"$out/r")" ">= 0.9x" "$(verdict '>=' 0.9 "$out/r")"
	row "peak RSS of the binary, ${FLEET_NODES} nodes, after the wrk phases" \
		"$(awk '/VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$exporter_pid/status")" "-" "-" "-" "-"
	kill -TERM -- "-$exporter_pid" 2>/dev/null || true
fi

# --- scale: the 1M-node synthetic run --------------------------------------------------
if want scale; then
	phase "1M-node synthetic run: the exposition's render at 100k and 1M nodes (collector BenchmarkFirstScrape, $HEAVY_ROUNDS rounds)"
	rounds "$HEAVY_ROUNDS" collector "$out/collector.test" '^BenchmarkFirstScrape$'
	for enc in gzip identity; do
		series "BenchmarkFirstScrape/$enc/nodes=1000000" ns/node >"$out/s"
		series "BenchmarkFirstScrape/$enc/nodes=100000" ns/node >"$out/f"
		ratios "$out/s" "$out/f" >"$out/r"
		row "1M-node synthetic run: render of the exposition ($enc), time per node, 1M vs 100k" \
			"$(median <"$out/s") ns/node" "$(median <"$out/f") ns/node" "$(stats <"$out/r")" "linear (~1x, <= 1.2x)" "$(verdict '<=' 1.2 "$out/r")"
	done
	if want heap; then
		heap_linear "1M-node synthetic run: live heap per node, 1M vs 100k" 1000000 100000
	fi
fi

# --- ironic: real Ironic's API on the same fleet ----------------------------------------
if want ironic; then
	phase "real Ironic's API vs the sidecar on one ${IRONIC_NODES}-node fleet, $IRONIC_ROUNDS rounds"
	ironicdb=ice_bench_ironic_$$
	newdb "$ironicdb" "$IRONIC_NODES"
	# What Ironic's objects layer writes and its API needs (conformance/fleet.py).
	read -r node_v cond_v < <("$PYTHON" -c 'from ironic import objects; objects.register_all(); print(objects.Node.VERSION, objects.Conductor.VERSION)')
	psql -q "${PG[@]}" -d "$ironicdb" -c "UPDATE nodes SET version = '$node_v', console_enabled = false" \
		-c "UPDATE conductors SET version = '$cond_v'" >/dev/null
	ironic_release=$("$PYTHON" -c 'from ironic import version; print(version.version_info.release_string())')
	iport=$(freeport)
	# Ironic's defaults where they matter: hash_ring_reset_interval 15 s, two API workers (the cores).
	(cd conformance && exec setsid "$PYTHON" ironic_fleet.py serve --db-url "postgresql+psycopg2://postgres@127.0.0.1/$ironicdb" \
		--port "$iport" --heartbeat-timeout 60 --hash-ring-reset-interval 15 --workers 2 --log-dir "$out/ironic" \
		--no-request-log >"$out/ironic.log" 2>&1) &
	pids+=($!)
	ironic=http://127.0.0.1:$iport
	for _ in $(seq 120); do curl -fs -o /dev/null "$ironic/" && break; sleep 1; done
	curl -fs -o /dev/null "$ironic/" || { echo "bench: Ironic's API did not start" >&2; tail -20 "$out/ironic.log" >&2; exit 1; }
	start_exporter cached "$ironicdb"
	start_exporter fresh "$ironicdb" --refresh.min-interval=0s
	uuids() { curl -fs -H 'X-OpenStack-Ironic-API-Version: 1.49' "$1" | awk '{ n += gsub(/"uuid"/, "") } END { print n + 0 }'; }
	all_fresh() { assert_fresh "$cached" 300 && assert_fresh "$fresh" 300 && assert_ironic_fresh "$ironic" 300; }
	heartbeat "$ironicdb"
	all_fresh
	inode=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	ihost=$(grep -m1 -o 'conductor="conductor-[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
	paths=(/v1/conductors "/v1/nodes?conductor=$ihost" /v1/nodes/detail "/v1/nodes/$inode?fields=uuid,conductor")
	labels=("GET /v1/conductors" "GET /v1/nodes?conductor=X" "GET /v1/nodes/detail (a page of 1,000)"
		"a node's conductor, GET /v1/nodes/{uuid}?fields=uuid,conductor")
	for i in "${!paths[@]}"; do
		: >"$out/ir.$i" && : >"$out/sc.$i" && : >"$out/sf.$i"
		# How many nodes each answer holds (Ironic 21.4 filters ?conductor= within its first page only).
		in=$(uuids "$ironic${paths[$i]}") sn=$(uuids "$cached${paths[$i]}")
		[[ $in == 0 && $sn == 0 ]] || labels[i]="${labels[i]}, answers of $in (Ironic) and $sn (sidecar) nodes"
	done
	for r in $(seq "$IRONIC_ROUNDS"); do
		for i in "${!paths[@]}"; do
			for who in ir sc sf; do
				case $who in ir) b=$ironic ;; sc) b=$cached ;; sf) b=$fresh ;; esac
				heartbeat "$ironicdb"
				all_fresh
				v=$(rps "$b${paths[$i]}" "$IRONIC_WRK_SECONDS" 4)
				all_fresh
				echo "$v" >>"$out/$who.$i"
				echo "  round $r: $who ${paths[$i]}: $v req/s" >&2
			done
		done
	done
	for i in "${!paths[@]}"; do
		ratios "$out/sc.$i" "$out/ir.$i" >"$out/r"
		ratios "$out/sf.$i" "$out/ir.$i" >"$out/rf"
		row "vs Ironic $ironic_release: ${labels[$i]} (${IRONIC_NODES} nodes, same database)" \
			"sidecar $(median <"$out/sc.$i") req/s; --refresh.min-interval=0: $(median <"$out/sf.$i") req/s" \
			"Ironic $(median <"$out/ir.$i") req/s" "$(stats <"$out/r"); min-interval=0: $(stats <"$out/rf")" "none: reported" "-"
	done
fi

# --- the table ------------------------------------------------------------------------
echo
echo "make bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
echo
echo "| figure | now (median) | its floor, same run (median) | ratio min / median / max | target | median meets it |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
