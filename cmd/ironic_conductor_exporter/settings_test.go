package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestConcurrencySettings: Ironic's concurrency limits reach the rules from
// ironic.conf, and an explicit flag wins over the file.
func TestConcurrencySettings(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ironic.conf")
	if err := os.WriteFile(conf, []byte("[conductor]\nmax_concurrent_deploy = 40\nmax_concurrent_clean = 8\nmax_concurrent_per_conductor_group = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args          []string
		deploy, clean int
		perGroup      bool
	}{
		{nil, 250, 50, false},
		{[]string{"--ironic.config-file=" + conf}, 40, 8, true},
		{[]string{"--ironic.config-file=" + conf, "--ironic.max-concurrent-clean=3", "--no-ironic.max-concurrent-per-conductor-group"}, 40, 3, false},
	} {
		var cfg config
		var dc demoConfig
		app, _, _, _ := newApp(&cfg, &dc)
		if _, err := app.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		src, err := applyIronicConfig(&cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := topologySettings(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		if s.MaxConcurrentDeploy != tc.deploy || s.MaxConcurrentClean != tc.clean || s.MaxConcurrentPerConductorGroup != tc.perGroup {
			t.Errorf("%v: deploy %d clean %d per group %v; want %d %d %v", tc.args, s.MaxConcurrentDeploy, s.MaxConcurrentClean,
				s.MaxConcurrentPerConductorGroup, tc.deploy, tc.clean, tc.perGroup)
		}
	}
}
