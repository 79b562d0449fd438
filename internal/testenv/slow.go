package testenv

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Scaled stretches a test's wait d by how busy the machine is: the
// one-minute load average per CPU (/proc/loadavg), at least 1, at most 8.
// A wait that an idle machine meets in d then holds on a machine that runs
// a second test suite beside it (issue 43: TestDemoCommand's 20 s ran out
// at load 8 on 2 cores). Without /proc it is d.
func Scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * loadFactor())
}

func loadFactor() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 1
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 1
	}
	return min(8, max(1, load/float64(runtime.NumCPU())))
}
