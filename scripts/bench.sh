#!/usr/bin/env bash
# make bench: every figure next to a baseline measured in the same run.
#
#  1. Go benchmarks: the ring lookup vs a bare MD5 of a UUID, the topology
#     (100,000 nodes, 300 conductors, 6 groups x 4 hardware types) vs the
#     same MD5 floor, and a full refresh (snapshot, topology, /metrics) on
#     real PostgreSQL at 10k and 100k nodes.
#  2. The binary on a 100k-node database under wrk: GET
#     /v1/nodes/{uuid}/conductor vs the trivial /healthz handler of the same
#     server, and the process' peak RSS.
#
# Needs PostgreSQL on 127.0.0.1:5432 (trust), python3-ironic for the schema,
# and wrk (installed here from Debian if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

BENCHTIME=${BENCHTIME:-1s}
WRK_SECONDS=${WRK_SECONDS:-10}
out=$(mktemp -d /tmp/ice-bench.XXXXXX)
db=ice_bench_$$
pid=""
cleanup() {
	[[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
	psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT

if ! command -v wrk >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

# ns/op (or a custom unit) of one benchmark line of a go test output file.
metric() { # file benchmark-regexp unit
	awk -v re="$2" -v unit="$3" '$1 ~ re { for (i = 2; i < NF; i++) if ($(i+1) == unit) { print $i; exit } }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

echo "== Go benchmarks (-benchtime $BENCHTIME)"
go test -run '^$' -bench . -benchmem -benchtime "$BENCHTIME" ./ring ./collector ./api | tee "$out/go.txt" | grep -E '^Benchmark'
go test -run '^$' -bench Refresh -benchmem -benchtime 5x ./cmd/ironic_conductor_exporter | tee "$out/refresh.txt" | grep -E '^Benchmark'

floor=$(metric "$out/go.txt" '^BenchmarkMD5Floor' ns/op)
get=$(metric "$out/go.txt" '^BenchmarkGet/md5' ns/op)
nfloor=$(metric "$out/go.txt" '^BenchmarkMD5UUIDFloor' ns/node)
build=$(metric "$out/go.txt" '^BenchmarkBuild' ns/node)
same=$(metric "$out/go.txt" '^BenchmarkRebuildUnchanged' ns/node)
echo
echo "ring Get (md5)              ${get} ns/op    = $(ratio "$get" "$floor") the md5 floor (${floor} ns)"
echo "topology, 100k nodes        ${build} ns/node  = $(ratio "$build" "$nfloor") the md5 floor (${nfloor} ns/node)"
echo "rebuild, unchanged database ${same} ns/node  = $(ratio "$same" "$nfloor") the md5 floor"
for n in 10000 100000; do
	for kind in cold steady; do
		ns=$(metric "$out/refresh.txt" "^BenchmarkRefresh/$kind/nodes=$n" ns/op)
		echo "refresh $kind, $n nodes: $(awk -v ns="$ns" 'BEGIN { printf "%.0f ms", ns / 1e6 }') (read + topology + /metrics)"
	done
done

echo
echo "== wrk on a 100k-node database"
psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
scripts/ironic-schema.sh "postgresql+psycopg2://postgres@127.0.0.1/$db" >/dev/null 2>&1
psql -q -h 127.0.0.1 -U postgres -d "$db" -v nodes=100000 -f scripts/bench-fleet.sql >/dev/null
CGO_ENABLED=0 go build -o "$out/exporter" ./cmd/ironic_conductor_exporter
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$out/exporter" --db.dsn "postgresql://postgres@127.0.0.1/$db?sslmode=disable" \
	--web.listen-address "127.0.0.1:$port" --refresh.min-interval 5s --log.level warn &
pid=$!
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.2; done
base="http://127.0.0.1:$port"
scrape=$( { /usr/bin/time -f %e curl -fs -o "$out/metrics.txt" "$base/metrics"; } 2>&1 )
echo "/metrics scrape: ${scrape}s, $(grep -vc '^#' "$out/metrics.txt") series, $(wc -c <"$out/metrics.txt") bytes"
uuid=$(grep -m1 -o 'node_uuid="[^"]*"' "$out/metrics.txt" | cut -d'"' -f2)
rps() { wrk -t2 -c32 -d"${WRK_SECONDS}s" "$1" | awk '/Requests\/sec/ { print $2 }'; }
trivial=$(rps "$base/healthz")
lookup=$(rps "$base/v1/nodes/$uuid/conductor")
echo "GET /healthz (trivial handler):      $trivial req/s"
echo "GET /v1/nodes/{uuid}/conductor:      $lookup req/s = $(awk -v a="$lookup" -v b="$trivial" 'BEGIN { printf "%.0f%%", 100 * a / b }') of the trivial handler"
echo "peak RSS: $(awk '/VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status")"
