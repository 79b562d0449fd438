package faults

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// attackNofile is the descriptor limit of the exporter under the
// connection floods: low, so that a flood bounded in count reaches it.
const attackNofile = 1024

// TestAttackProbeDoorIdleFlood: 3,000 idle connections to the probe
// listener of an exporter whose descriptor limit is 1,024 (issue 43's
// attack with 21,000 at the default limit: accept4 "too many open files",
// every endpoint on every door timing out) leave /metrics and the probes,
// on both listeners, answering 200 with p99 under a second, measured
// against a quiet run in the same test.
func TestAttackProbeDoorIdleFlood(t *testing.T) {
	h := newHarness(t, postgres())
	d := startDoorsNofile(t, h, attackNofile)
	defer d.stop()
	quiet := d.during(func() { time.Sleep(2 * time.Second) })
	d.report(t, "quiet", fmt.Sprintf("descriptor limit %d", attackNofile), quiet)
	const n = 3000
	opened := 0
	got := d.during(func() {
		var conns []net.Conn
		for range n {
			c, err := net.DialTimeout("tcp", d.probe, 2*time.Second)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		opened = len(conns)
		time.Sleep(5 * time.Second)
		for _, c := range conns {
			c.Close()
		}
	})
	d.report(t, "probe-door-idle", fmt.Sprintf("%d idle connections to the probe listener held 5s, descriptor limit %d; quiet /metrics p99 %s",
		opened, attackNofile, quiet["/metrics"].p99().Round(time.Millisecond)), got)
	if opened < n/2 {
		t.Errorf("only %d of %d connections opened: the flood did not happen", opened, n)
	}
}
