package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
)

// TestSetupAuthDefaults: an ironic.conf without auth_strategy is Ironic's
// keystone, which without service credentials refuses to start rather than
// serve an open API; without a file the default is noauth.
func TestSetupAuthDefaults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ironic.conf")
	if err := os.WriteFile(p, []byte("[database]\nconnection = sqlite:////x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := ironicconf.Load([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := setupAuth(authConfig{policyRelease: "21.4"}, conf, []string{":9608"}, log); err == nil || !strings.Contains(err.Error(), "auth_url") {
		t.Errorf("keystone by default without auth_url: err %v, want one naming auth_url", err)
	}
	a, err := setupAuth(authConfig{policyRelease: "21.4"}, nil, []string{"127.0.0.1:9608"}, log)
	if err != nil || a.mode != "noauth" || a.authn != nil {
		t.Errorf("no config file: %+v, %v; want noauth", a, err)
	}
	if got := beyondLoopback([]string{"127.0.0.1:1", "[::1]:2", "localhost:3", ":4", "10.0.0.1:5"}); strings.Join(got, ",") != ":4,10.0.0.1:5" {
		t.Errorf("beyondLoopback = %v", got)
	}
}
