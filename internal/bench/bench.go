// Package bench holds what the benchmarks of several packages share for
// `make bench` (scripts/bench.sh): rounds that alternate a subject with its
// floor inside one test process.
//
// Go runs the -test.count repetitions of a benchmark back to back (subject,
// subject, ..., floor, floor, ...), so a change of load on a shared machine
// lands on one side only. Where a test binary is cheap to start the script
// alternates by running it once per round; where its TestMain is costly (db
// and cmd run Ironic's migrations) the benchmark repeats its own
// sub-benchmarks, subject then floor, Rounds times, and the script reads
// them in order (Go names the repeats NAME#01, NAME#02, ...).
package bench

import (
	"os"
	"slices"
	"strconv"
)

// RoundsEnv is the environment variable that sets how many rounds the
// benchmarks repeat in one process (default 1).
const RoundsEnv = "ICE_BENCH_ROUNDS"

// Rounds returns items repeated as many times as RoundsEnv says, in order
// (all items, then all again), at least once: a benchmark ranges over it
// instead of over items to run its sub-benchmarks in alternated rounds.
func Rounds[T any](items ...T) []T {
	n, err := strconv.Atoi(os.Getenv(RoundsEnv))
	if err != nil || n < 1 {
		n = 1
	}
	return slices.Repeat(items, n)
}
