package collector

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestTextFamiliesIsClientGolang: random series of a counter and gauges
// with zero to three labels, label values with the bytes
// expfmt escapes and values that sort before the closing quote, and the
// values expfmt writes specially, are written as a registry and expfmt
// write them.
func TestTextFamiliesIsClientGolang(t *testing.T) {
	defer func(n int) { families = families[:n] }(len(families))
	fams := []*family{
		newFamily("test_b_plain", "no labels"),
		newFamily("test_a_total", `help with \ and`+"\nnewline", "zone"),
		newFamily("test_c_info", "three labels", "alpha", "mid", "zeta"),
	}
	parts := []string{"", "a", "b", " ", `"`, `\`, "\n", "é", "a b", "!", "~"}
	values := []float64{0, 1, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e-9, 1.5e9, 1764662400.123456, 42, 0.1}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 200; round++ {
		tf := textFamilies{}
		reg := prometheus.NewRegistry()
		seen := map[string]bool{}
		var metrics []prometheus.Metric
		for range rng.IntN(20) {
			f := fams[rng.IntN(len(fams))]
			labels := make([]string, len(f.labels))
			for i := range labels {
				for range rng.IntN(3) {
					labels[i] += parts[rng.IntN(len(parts))]
				}
			}
			key := f.name + "\xff" + strings.Join(labels, "\xff")
			if seen[key] {
				continue
			}
			seen[key] = true
			v := values[rng.IntN(len(values))]
			tf.add(f, v, labels...)
			metrics = append(metrics, prometheus.MustNewConstMetric(f.desc, f.typ, v, labels...))
		}
		reg.MustRegister(metricsCollector(metrics))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
				t.Fatal(err)
			}
		}
		tf.each(func(_ string, text []byte) { got.Write(text) })
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: written\n%s\nclient_golang writes\n%s", round, got.Bytes(), want.Bytes())
		}
	}
}

// metricsCollector is an unchecked collector of fixed metrics.
type metricsCollector []prometheus.Metric

func (c metricsCollector) Describe(chan<- *prometheus.Desc) {}
func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}
