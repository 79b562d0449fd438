package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// attackNofile is the descriptor limit of the exporter under the
// connection floods: low, so that a flood bounded in count reaches it.
const attackNofile = 1024

// TestAttackProbeDoorIdleFlood: 3,000 idle connections to the probe
// listener of an exporter whose descriptor limit is 1,024 (issue 43's
// attack with 21,000 at the default limit: accept4 "too many open files",
// every endpoint on every door timing out) leave /metrics and the probes,
// on both listeners, answering 200 with p99 under a second, measured
// against a quiet run in the same test. The flood comes from a process of
// its own: dialled from this one, its goroutines delayed the pollers'
// requests, which a listener at its cap cannot tell from silent
// connections.
func TestAttackProbeDoorIdleFlood(t *testing.T) {
	h := newHarness(t, postgres())
	d := startDoorsNofile(t, h, attackNofile)
	defer d.stop()
	quiet := d.during(func() { time.Sleep(2 * time.Second) })
	d.report(t, "quiet", fmt.Sprintf("descriptor limit %d", attackNofile), quiet)
	const n = 3000
	var r floodResult
	got := d.during(func() { r = flood(t, floodSpec{Mode: "idle", Addr: d.probe, Conns: n, Dur: 5 * time.Second}) })
	opened := int(r.Codes["open"])
	// A probe that connects and stays silent longer than the burst takes
	// to fill the probe listener's cap is, to the listener, one more idle
	// connection of the flood: it may be evicted (seen: 1 of ~490 in 1 run
	// of 6). Only a minimum age before eviction would spare it, at the
	// price of slower accepts under the flood; a kubelet probe retries
	// (failureThreshold 3). So up to 1% of the probes here may fail; the
	// telemetry door's pollers must not.
	d.reportTolerating(t, "probe-door-idle", fmt.Sprintf("%d idle connections to the probe listener held 5s, descriptor limit %d; quiet /metrics p99 %s",
		opened, attackNofile, quiet["/metrics"].p99().Round(time.Millisecond)), got, "probe /healthz", 0.01)
	if opened < n/2 {
		t.Errorf("only %d of %d connections opened: the flood did not happen", opened, n)
	}
}

// TestAttackTelemetrySlowloris: 600 connections dribbling their request
// headers to the telemetry listener (capped at 64 here, so that a bounded
// flood fills it; issue 43 measured /metrics p99 6,163 ms with its 512 taken
// before TLS or auth) leave /metrics and the probes answering 200 every
// time with p99 under a second: the listener closes the connections whose
// server waits for their bytes to make room for a scraper's, and never a
// fresh one whose request has come but not been read yet (a burst of
// accepts closed a few of those while they were the oldest idle). The
// flood comes from a process of its own, as in
// TestAttackProbeDoorIdleFlood.
func TestAttackTelemetrySlowloris(t *testing.T) {
	h := newHarness(t, postgres())
	d := startDoors(t, h, "--web.max-connections=64")
	defer d.stop()
	quiet := d.during(func() { time.Sleep(2 * time.Second) })
	d.report(t, "quiet", "--web.max-connections=64", quiet)
	const n = 600
	var r floodResult
	got := d.during(func() { r = flood(t, floodSpec{Mode: "slowloris", Addr: d.metrics, Conns: n, Dur: 6 * time.Second}) })
	opened := int(r.Codes["open"])
	d.report(t, "telemetry-slowloris", fmt.Sprintf("%d slowloris connections to the telemetry listener held 6s; quiet /metrics p99 %s",
		opened, quiet["/metrics"].p99().Round(time.Millisecond)), got)
	if opened < n/2 {
		t.Errorf("only %d of %d connections opened: the flood did not happen", opened, n)
	}
}

// TestAttackAPIDoorCPU: floods of the API door over TLS with an RSA-2048
// certificate, each from a process of its own for 8 s at most, leave
// /metrics on the telemetry door and the probes answering 200 with p99
// under a second (or, on a machine busy enough that the quiet run's p99
// is over 200 ms, five times that): new TLS handshakes from 200 senders,
// then unauthenticated GET /v1 (a public route) from 1,000 keep-alive
// senders (issue 43 measured /metrics p99 57 ms -> 5,546 ms with it: the
// caps bounded connections and requests, not the CPU every door shares),
// then GET /v1/nodes/detail with http_basic's right password from 1,000,
// and with a new wrong password each (a bcrypt check each) from 200.
func TestAttackAPIDoorCPU(t *testing.T) {
	h := newHarness(t, postgres())
	digest, err := bcrypt.GenerateFromPassword([]byte("right"), 10)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(htpasswd, []byte("admin:"+string(digest)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDoors(t, h, "--api.config-file="+writeRSACert(t), "--auth.strategy=http_basic", "--auth.http-basic-user-file="+htpasswd)
	defer d.stop()
	if !d.two {
		t.Fatal("the build has one door: this flood needs --api.listen-address")
	}
	quiet := d.during(func() { time.Sleep(3 * time.Second) })
	d.report(t, "quiet", "API door over TLS (RSA-2048)", quiet)
	bound := max(time.Second, 5*quiet["/metrics"].p99(), 5*quiet["probe /healthz"].p99())
	for _, f := range []struct {
		name string
		spec floodSpec
	}{
		{"api-handshakes", floodSpec{Mode: "handshakes", Addr: d.api, Conns: 200, Max: 500_000, Dur: 8 * time.Second}},
		{"api-get-v1", floodSpec{Mode: "get", Addr: d.api, Path: "/v1", Conns: 1000, Max: 2_000_000, Dur: 8 * time.Second}},
		{"api-authenticated-nodes", floodSpec{Mode: "get", Addr: d.api, Path: "/v1/nodes/detail", Conns: 1000, Max: 2_000_000,
			Dur: 8 * time.Second, User: "admin", Password: "right"}},
		{"api-bad-passwords", floodSpec{Mode: "get", Addr: d.api, Path: "/v1/nodes", Conns: 200, Max: 2_000_000,
			Dur: 8 * time.Second, User: "admin", Password: "wrong-%d"}},
	} {
		var r floodResult
		got := d.during(func() { r = flood(t, f.spec) })
		var parts []string
		for _, name := range []string{"/metrics", "/healthz", "probe /healthz"} {
			l := got[name]
			parts = append(parts, name+" "+l.String())
			if l.non200 > 0 || l.p99() >= bound || len(l.took) == 0 {
				t.Errorf("%s during %s: %s; want 200 every time, p99 under %s", name, f.name, l, bound)
			}
		}
		t.Logf("FIGURES flood %s (doors 2): %s; flood of %d senders got %v in %s; quiet /metrics p99 %s, probe p99 %s",
			f.name, strings.Join(parts, "; "), f.spec.Conns, r.Codes, r.Took.Round(time.Millisecond),
			quiet["/metrics"].p99().Round(time.Millisecond), quiet["probe /healthz"].p99().Round(time.Millisecond))
		answered := int64(0)
		for code, n := range r.Codes {
			if code != "0" {
				answered += n
			}
		}
		if answered < 100 {
			t.Errorf("%s: the flood got %v: it did not happen", f.name, r.Codes)
		}
	}
}
