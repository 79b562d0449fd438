package main

import (
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// TestFitConns: under a descriptor limit too low for the caps asked, each
// door's cap is lowered so that every listener's connections, plus the
// reserve, fit, and the log says so; under a high limit the caps stay;
// --web.max-connections=0 gets a cap that fits.
func TestFitConns(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Cur < 2000 {
		t.Skipf("RLIMIT_NOFILE %d: the test needs 2000 to compare with", old.Cur)
	}
	check := func(nofile uint64, webCap int, wantLowered bool) {
		t.Helper()
		lowered := syscall.Rlimit{Cur: nofile, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }()
		var logs strings.Builder
		web, probe := fitConns(slog.New(slog.NewTextHandler(&logs, nil)), webCap, 2, true, 2)
		if got := strings.Contains(logs.String(), "connection caps lowered"); got != wantLowered {
			t.Errorf("nofile %d, cap %d: lowered %v, want %v:\n%s", nofile, webCap, got, wantLowered, logs.String())
		}
		if used := 2*(web+2) + probe + 2 + fdReserve(2); used > int(nofile) || web <= 0 || probe <= 0 {
			t.Errorf("nofile %d, cap %d: caps web %d probe %d use %d descriptors", nofile, webCap, web, probe, used)
		}
		if !wantLowered && webCap > 0 && (web != webCap || probe != probeMaxConns) {
			t.Errorf("nofile %d: caps %d/%d changed without need", nofile, web, probe)
		}
	}
	check(600, 512, true)
	check(1900, 512, false)
	check(600, 0, false)
}

// TestAcceptErrorsWarned: accept errors are warnings, at most one per
// acceptWarnEvery; other server errors stay at debug.
func TestAcceptErrorsWarned(t *testing.T) {
	var logs strings.Builder
	l := serverErrorLog(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for range 5 {
		l.Print("http: Accept error: accept tcp [::]:10068: accept4: too many open files; retrying in 5ms")
	}
	l.Print("http: TLS handshake error from 127.0.0.1:5555: EOF")
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings for 5 accept errors within %s, want 1:\n%s", n, acceptWarnEvery, out)
	}
	if !strings.Contains(out, "level=DEBUG msg=\"http: TLS handshake error") {
		t.Errorf("a handshake error not at debug:\n%s", out)
	}
}
