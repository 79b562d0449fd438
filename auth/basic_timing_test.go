package auth

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// ksStatistic is the two-sample Kolmogorov-Smirnov statistic: the largest
// distance between the empirical distribution functions of a and b.
func ksStatistic(a, b []time.Duration) float64 {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	var d float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		x := min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = max(d, abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// TestBasicTimingOracle: over many tries, known and unknown users take
// the same distribution of times, in the two ways the issue told them
// apart: a file whose users have different bcrypt costs (a fresh password
// each time), and (candidate, p) followed by (another unknown user, p),
// whose second answer came from the cache exactly when the candidate was
// unknown (the same follower names in both arms). The samples alternate, so a machine that gets busier slows both
// alike; the two-sample Kolmogorov-Smirnov test at a 0.1% level (critical
// distance 1.95*sqrt(2/n)) decides, no absolute time is asserted. Before the
// fix the distances were ~0.5 and ~1.
func TestBasicTimingOracle(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("many bcrypt comparisons; not with -short")
	case raceEnabled:
		t.Skip("the race detector slows bcrypt tenfold; `make attacks` (part of `make test`) runs this test without it")
	}
	const n = 200
	file := filepath.Join(t.TempDir(), "htpasswd")
	users := []string{"cheap", "dear"}
	content := "cheap:" + digest(t, "c", bcrypt.MinCost) + "\n" + "dear:" + digest(t, "d", bcrypt.MinCost+3) + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewBasic(file, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	timed := func(user, pass string) time.Duration {
		start := time.Now()
		if _, f := b.Authenticate(basicRequest(user, pass)); f == nil || f.Status != 401 {
			t.Fatalf("%s with a wrong password: %v, want 401", user, f)
		}
		return time.Since(start)
	}
	critical := 1.95 * math.Sqrt(2.0/n)
	check := func(what string, known, unknown []time.Duration) {
		d := ksStatistic(known, unknown)
		fmt.Printf("FIGURES http_basic %s: median known %v unknown %v, KS distance %.3f (critical %.3f)\n",
			what, median(known), median(unknown), d, critical)
		if d > critical {
			t.Errorf("%s: known and unknown users told apart: KS distance %.3f > %.3f (medians %v, %v)",
				what, d, critical, median(known), median(unknown))
		}
	}
	var known, unknown []time.Duration
	for i := range n {
		known = append(known, timed(users[i%len(users)], fmt.Sprintf("k%d", i)))
		unknown = append(unknown, timed(fmt.Sprintf("nobody%d", i), fmt.Sprintf("u%d", i)))
	}
	check("mixed costs", known, unknown)

	known, unknown = known[:0], unknown[:0]
	for i := range n {
		p := fmt.Sprintf("seq%d", i)
		timed(users[i%len(users)], p)
		known = append(known, timed(fmt.Sprintf("other%d", i), p))
		p = fmt.Sprintf("seq-u%d", i)
		timed(fmt.Sprintf("candidate%d", i), p)
		unknown = append(unknown, timed(fmt.Sprintf("other%d", i), p))
	}
	check("cache follow-up", known, unknown)
}
