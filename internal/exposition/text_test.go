package exposition

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestFamiliesIsClientGolang: random series of a counter and gauges
// with zero to three labels, label values with the bytes
// expfmt escapes and values that sort before the closing quote, and the
// values expfmt writes specially, are written as a registry and expfmt
// write them.
func TestFamiliesIsClientGolang(t *testing.T) {
	fams := []*Family{
		{Name: "test_b_plain", Help: "no labels", Type: prometheus.GaugeValue},
		{Name: "test_a_total", Help: `help with \ and` + "\nnewline", Labels: []string{"zone"}, Type: prometheus.CounterValue},
		{Name: "test_c_info", Help: "three labels", Labels: []string{"alpha", "mid", "zeta"}, Type: prometheus.GaugeValue},
	}
	parts := []string{"", "a", "b", " ", `"`, `\`, "\n", "é", "a b", "!", "~"}
	values := []float64{0, 1, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e-9, 1.5e9, 1764662400.123456, 42, 0.1}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 200; round++ {
		tf := Families{}
		reg := prometheus.NewRegistry()
		seen := map[string]bool{}
		var metrics []prometheus.Metric
		for range rng.IntN(20) {
			f := fams[rng.IntN(len(fams))]
			labels := make([]string, len(f.Labels))
			for i := range labels {
				for range rng.IntN(3) {
					labels[i] += parts[rng.IntN(len(parts))]
				}
			}
			key := f.Name + "\xff" + strings.Join(labels, "\xff")
			if seen[key] {
				continue
			}
			seen[key] = true
			v := values[rng.IntN(len(values))]
			tf.Add(f, v, labels...)
			metrics = append(metrics, prometheus.MustNewConstMetric(prometheus.NewDesc(f.Name, f.Help, f.Labels, nil), f.Type, v, labels...))
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
		tf.Each(func(_ string, text []byte) { got.Write(text) })
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
