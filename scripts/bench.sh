#!/usr/bin/env bash
# make bench: every figure next to its floor, measured in the same run.
#
# Each subject and its floor are separate Go benchmarks of one compiled test
# binary, run alternately ROUNDS times (subject, floor, subject, floor...),
# so that the shared machine's load hits both alike; the table prints the
# min/median/max of the per-round ratio. Then the binary, built BEFORE its
# database, is measured under wrk on a 100k-node fleet whose heartbeats are
# asserted fresh (ironic_conductor_alive all 1) when measured.
#
# Needs PostgreSQL on 127.0.0.1:5432 (trust), python3-ironic for the schema,
# and wrk (installed from Debian if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
WRK_SECONDS=${WRK_SECONDS:-5}
out=$(mktemp -d /tmp/ice-bench.XXXXXX)
db=ice_bench_$$
pid=""
cleanup() {
	[[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
	psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }

rows=()
row() { rows+=("$(printf '| %s | %s | %s | %s | %s |' "$@")"); }
# stats of ratios: min/median/max
stats() { sort -g | awk '{ a[NR] = $1 } END { printf "%.2fx / %.2fx / %.2fx", a[1], a[int((NR + 1) / 2)], a[NR] }'; }
# value of unit in a benchmark output line
val() { awk -v unit="$2" '/^Benchmark/ { for (i = 2; i < NF; i++) if ($(i+1) == unit) { print $i; exit } }' "$1"; }

# pair NAME BIN PKGDIR SUBJECT FLOOR UNIT TARGET: alternate SUBJECT and FLOOR.
pair() {
	local name=$1 bin=$2 dir=$3 subject=$4 floor=$5 unit=$6 target=$7 r s f
	: >"$out/ratios"
	for r in $(seq "$ROUNDS"); do
		(cd "$dir" && "$bin" -test.run '^$' -test.bench "^${subject}\$" -test.benchtime "${BENCHTIME:-10x}") >"$out/s.txt"
		(cd "$dir" && "$bin" -test.run '^$' -test.bench "^${floor}\$" -test.benchtime "${BENCHTIME:-10x}") >"$out/f.txt"
		s=$(val "$out/s.txt" "$unit") f=$(val "$out/f.txt" "$unit")
		awk -v s="$s" -v f="$f" 'BEGIN { print s / f }' >>"$out/ratios"
		echo "  $name round $r: $s vs floor $f $unit" >&2
	done
	row "$name" "$(awk -v s="$s" 'BEGIN { printf "%.2f ms", s / 1e6 }')" \
		"$(awk -v f="$f" 'BEGIN { printf "%.2f ms", f / 1e6 }')" "$(stats <"$out/ratios")" "$target"
}

echo "== compiling the benchmarks"
go test -c -o "$out/collector.test" ./collector
go test -c -o "$out/db.test" ./db
go test -c -o "$out/topology.test" ./topology

echo "== /metrics (100k nodes, over HTTP), alternated $ROUNDS rounds"
pair "/metrics plain" "$out/collector.test" collector 'BenchmarkMetrics/identity/nodes=100000' \
	'BenchmarkMetrics/identity-floor/nodes=100000' ns/op "<= 3x"
pair "/metrics gzip" "$out/collector.test" collector 'BenchmarkMetrics/gzip/nodes=100000' \
	'BenchmarkMetrics/gzip-floor/nodes=100000' ns/op "<= 5x"

echo "== full node read vs COPY (PostgreSQL, 100k nodes)"
(cd db && "$out/db.test" -test.run '^$' -test.bench 'BenchmarkNodeRead' -test.benchtime 5x -test.count "$ROUNDS") | tee "$out/read.txt" | grep '^Benchmark'
for drv in libpq pgx; do
	paste <(awk '/NodeRead\/copy/ { print $3 }' "$out/read.txt") <(awk -v d="$drv" '$1 ~ "NodeRead/" d "/" { print $3 }' "$out/read.txt") |
		awk '{ print $2 / $1 }' >"$out/ratios"
	row "full read ($drv)" "$(awk -v d="$drv" '$1 ~ "NodeRead/" d "/" { printf "%.1f ms", $3 / 1e6; exit }' "$out/read.txt")" \
		"$(awk '/NodeRead\/copy/ { printf "%.1f ms (COPY)", $3 / 1e6; exit }' "$out/read.txt")" "$(stats <"$out/ratios")" "<= 1.3x"
done

echo "== live heap (10k, 100k, 1M nodes)"
(cd collector && "$out/collector.test" -test.run '^$' -test.bench 'BenchmarkLiveHeap' -test.benchtime 1x) | tee "$out/heap.txt" | grep '^Benchmark'
for n in 10000 100000 1000000; do
	b=$(awk -v n="$n" '$1 ~ "nodes=" n "-" { for (i = 2; i < NF; i++) if ($(i+1) == "B/node") print $i }' "$out/heap.txt")
	p=$(awk -v n="$n" '$1 ~ "nodes=" n "-" { for (i = 2; i < NF; i++) if ($(i+1) == "B/node-with-plain") print $i }' "$out/heap.txt")
	row "live heap, $n nodes" "$b B/node ($p with plain cached)" "exposition: ~182 B/node plain, ~27 gzip" "-" "<= 400 B/node"
done

echo "== the binary on a 100k-node PostgreSQL fleet (built first, then the database)"
CGO_ENABLED=0 go build -o "$out/exporter" ./cmd/ironic_conductor_exporter
psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
scripts/ironic-schema.sh "postgresql+psycopg2://postgres@127.0.0.1/$db" >/dev/null 2>&1
psql -q -h 127.0.0.1 -U postgres -d "$db" -v nodes=100000 -f scripts/bench-fleet.sql >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$out/exporter" --db.dsn "postgresql://postgres@127.0.0.1/$db?sslmode=disable" \
	--web.listen-address "127.0.0.1:$port" --refresh.min-interval 5s --log.level warn &
pid=$!
base="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -fs -o /dev/null "$base/readyz" && break; sleep 0.2; done
heartbeat() { psql -q -h 127.0.0.1 -U postgres -d "$db" -c "UPDATE conductors SET updated_at = now() AT TIME ZONE 'utc'" >/dev/null; }
assert_fresh() {
	curl -fs "$base/metrics" >"$out/metrics.txt"
	dead=$(grep -c '^ironic_conductor_alive{.*} 0' "$out/metrics.txt" || true)
	[[ "$dead" == 0 ]] || { echo "bench: $dead conductors not alive: the figures would measure a stale fleet" >&2; exit 1; }
}
heartbeat; sleep 5.5; assert_fresh
uuid=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
rps() { wrk -t2 -c32 -d"${WRK_SECONDS}s" "$1" | awk '/Requests\/sec/ { print $2 }'; }
: >"$out/ratios"
for r in $(seq "$ROUNDS"); do
	heartbeat
	t=$(rps "$base/healthz") l=$(rps "$base/v1/nodes/$uuid/conductor")
	awk -v a="$l" -v b="$t" 'BEGIN { print a / b }' >>"$out/ratios"
done
assert_fresh
row "lookup /v1/nodes/{uuid}/conductor" "$l req/s" "$t req/s (/healthz)" "$(stats <"$out/ratios")" ">= 0.9"
row "peak RSS, 100k nodes" "$(awk '/VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status")" "-" "-" "-"

echo
echo "| figure | now | its floor, same run | ratio min / median / max | target |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
