package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// TestFlagTable: every flag of the command line has its environment
// variable, and the README's flag table lists each with that variable, and
// nothing the command line lacks.
func TestFlagTable(t *testing.T) {
	var cfg config
	var dc demoConfig
	app, _, _, demoCmd := newApp(&cfg, &dc)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	section := text[strings.Index(text, "## Flags"):strings.Index(text, "## Metrics")]
	row := regexp.MustCompile("(?m)^\\| `(?:demo )?--([a-z0-9.\\-]+)`(?: \\(env `([A-Z0-9_]+)`\\))? \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = m[2]
	}
	seen := map[string]bool{}
	check := func(flags []*kingpin.FlagModel) {
		for _, f := range flags {
			if f.Hidden || f.Name == "help" {
				continue
			}
			seen[f.Name] = true
			env, ok := documented[f.Name]
			switch {
			case !ok:
				t.Errorf("--%s is not in README.md's flag table", f.Name)
			case f.Name == "version":
			case f.Envar == "":
				t.Errorf("--%s has no environment variable", f.Name)
			case env != f.Envar:
				t.Errorf("--%s: README says env %q, the flag reads %q", f.Name, env, f.Envar)
			}
		}
	}
	check(app.Model().Flags)
	check(demoCmd.Model().Flags)
	for name := range documented {
		if !seen[name] {
			t.Errorf("README.md lists --%s, which the command line does not have", name)
		}
	}
	if len(seen) < 15 {
		t.Errorf("only %d flags seen", len(seen))
	}
}

// TestHeartbeatTimeoutSeconds: bare seconds as in ironic.conf, durations,
// and the environment variable.
func TestHeartbeatTimeoutSeconds(t *testing.T) {
	for arg, want := range map[string]time.Duration{"60": time.Minute, "30": 30 * time.Second, "1m30s": 90 * time.Second, "0": 0} {
		var cfg config
		var dc demoConfig
		app, _, _, _ := newApp(&cfg, &dc)
		if _, err := app.Parse([]string{"--ironic.heartbeat-timeout=" + arg}); err != nil || cfg.heartbeatTimeout != want || !cfg.heartbeatSet {
			t.Errorf("--ironic.heartbeat-timeout=%s: %v, %v (set %v), want %v", arg, err, cfg.heartbeatTimeout, cfg.heartbeatSet, want)
		}
	}
	var cfg config
	var dc demoConfig
	app, _, _, _ := newApp(&cfg, &dc)
	if _, err := app.Parse([]string{"--ironic.heartbeat-timeout=soon"}); err == nil || !strings.Contains(err.Error(), "seconds") {
		t.Errorf("a bad timeout: %v", err)
	}
	t.Setenv("IRONIC_EXPORTER_IRONIC_HEARTBEAT_TIMEOUT", "45")
	app, _, _, _ = newApp(&cfg, &dc)
	if _, err := app.Parse(nil); err != nil || cfg.heartbeatTimeout != 45*time.Second ||
		!givenBy(cfg.heartbeatSet, "ironic.heartbeat-timeout") {
		t.Errorf("from the environment: %v %v", err, cfg.heartbeatTimeout)
	}
}

// TestDemoRefuses: flags the demo would ignore, and speeds out of range.
func TestDemoRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--db.dsn=postgresql://x/y"}, {"demo", "--ironic.config-file", "/etc/ironic/ironic.conf"},
		{"--ironic.heartbeat-timeout=30", "demo"}, {"demo", "--refresh.min-interval=1s"}, {"demo", "--demo.speed=0"},
		{"demo", "--demo.speed=21"},
	} {
		var cfg config
		var dc demoConfig
		app, _, _, _ := newApp(&cfg, &dc)
		if _, err := app.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := checkDemoArgs(args, dc); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	dc := demoConfig{speed: 5}
	if err := checkDemoArgs([]string{"demo", "--demo.speed=5", "--web.listen-address=:0"}, dc); err != nil {
		t.Errorf("plain demo refused: %v", err)
	}
}

// TestNotIronicDatabase: a database without Ironic's tables is reported as
// a permanent problem in the logs (kind schema in the metrics); a server
// that is down as a transient one (kind connection); /readyz tells neither;
// neither claims a last good topology.
func TestNotIronicDatabase(t *testing.T) {
	testenv.Need(t, testenv.PostgreSQL)
	name := fmt.Sprintf("ice_not_ironic_%d", os.Getpid())
	admin, err := sql.Open("postgres", "postgresql://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	}()
	for _, tc := range []struct {
		dsn        func() string
		want, kind string
	}{
		{func() string { return "postgresql://postgres@127.0.0.1:5432/" + name + "?sslmode=disable" }, "permanent", "schema"},
		// A free port taken only now: one taken before the first case
		// could be the port that case's exporter then listens on, which
		// answers the connection and lets it time out instead of refusing.
		{func() string { return dsnFor(testenv.FreeAddr(t)) }, "transient", "connection"},
	} {
		p := start(t, tc.dsn())
		// /readyz says only "not ready" (it is unauthenticated); the kind
		// is in the metrics and the logs.
		code, body := p.get(t, "/readyz")
		if code != http.StatusServiceUnavailable || body != "not ready\n" {
			t.Errorf("%s: /readyz %d %q, want 503 saying only not ready", tc.want, code, body)
		}
		if v := p.metric(t, `ironic_exporter_last_refresh_error{kind="`+tc.kind+`"}`); v != "1" {
			t.Errorf("%s: ironic_exporter_last_refresh_error{kind=%q} = %q, want 1", tc.want, tc.kind, v)
		}
		// The log reaches the test through a pipe: give it a moment.
		logs := p.Logs()
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs, "problem="+tc.want) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			logs = p.Logs()
		}
		if !strings.Contains(logs, "problem="+tc.want) || strings.Contains(logs, "last good") {
			t.Errorf("%s: logs:\n%s", tc.want, logs)
		}
	}
}
