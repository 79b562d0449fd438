package main

import (
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/demo"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestDemoSettings: the exporter serves the demo with the settings its
// simulator judges the fleet by (demo.Demo.Settings), the flags the demo
// honours reaching both, and the demo's release rather than the one its
// schema would be detected as.
func TestDemoSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(topology.Settings) bool
	}{
		{[]string{"demo"}, func(s topology.Settings) bool {
			return s.Release == demo.Release && s.PartitionExponent == 5 && s.Algorithm == ring.MD5
		}},
		{[]string{"demo", "--ironic.hash-partition-exponent=7", "--ironic.hash-ring-algorithm=sha1", "--ironic.release=2024.2"},
			func(s topology.Settings) bool {
				return s.Release == rules.MustRelease("26.1") && s.PartitionExponent == 7 && s.Algorithm == ring.SHA1
			}},
	} {
		var cfg config
		var dc demoConfig
		app, _, _, _ := newApp(&cfg, &dc)
		if _, err := app.Parse(append(tc.args, "--demo.speed=20")); err != nil {
			t.Fatal(err)
		}
		given, err := demoSettings(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, err := demo.Start(demo.Options{Speed: dc.speed, Settings: given})
		if err != nil {
			t.Fatal(err)
		}
		useDemo(&cfg, d)
		got, err := topologySettings(cfg, flagSources)
		if err != nil {
			t.Fatal(err)
		}
		if got != d.Settings() || !tc.want(got) || got.HeartbeatTimeout != demo.HeartbeatTimeout/20 {
			t.Errorf("%v: the exporter runs with %+v, the simulator with %+v", tc.args, got, d.Settings())
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var cfg config
	cfg.algorithm, cfg.partitionExponent = "crc32", 5
	if _, err := demoSettings(cfg); err == nil {
		t.Error("unknown algorithm accepted")
	}
}
