package faults

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dropSYNs makes connects to the loopback port of addr get no answer: an
// nftables rule of a table of the test's own drops the SYNs to it
// (established connections pass). It returns the function removing the
// rule, also run at cleanup, so that the rule never outlives the test.
func dropSYNs(t *testing.T, addr string) (remove func()) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatalf("the connect fault needs nftables (apt-get install nftables): %v", err)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("ice_faults_%d_%s", os.Getpid(), port)
	ruleset := fmt.Sprintf(`table ip %s {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr 127.0.0.1 tcp dport %s tcp flags & (syn | ack) == syn drop
	}
}
`, table, port)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, out)
	}
	removed := false
	remove = func() {
		if removed {
			return
		}
		removed = true
		if out, err := exec.Command("nft", "delete", "table", "ip", table).CombinedOutput(); err != nil {
			t.Errorf("nft delete table %s: %v\n%s", table, err, out)
		}
	}
	t.Cleanup(remove)
	return remove
}

var connectTimedOut = regexp.MustCompile(`connecting to database: timed out after ([0-9.]+m?s)`)

// connectUnanswered: the SYNs to the database are dropped, so a new
// connection gets no answer. The pooled connections are closed (the proxy
// drops them) so that the next refresh must connect: it fails within
// --refresh.timeout with ironic_up 0, the log names the connect step with
// the time it really took, and removing the rule recovers.
func connectUnanswered(t *testing.T, b backend) {
	h := newHarness(t, b)
	p := h.proxied()
	h.start()
	h.fault(b.name + " connect unanswered (SYN dropped)")
	remove := dropSYNs(t, p.addr)
	if c, err := net.DialTimeout("tcp", p.addr, 300*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("a connect through the rule was answered")
	}
	p.set(drop) // the pool's connections die: the next refresh connects
	p.set(pass)
	h.down()
	h.staysDown(2*refreshTimeout, "while no connect is answered")
	h.waitLog("refresh failed", "connecting to database: timed out after")
	for i, m := range connectTimedOut.FindAllStringSubmatch(h.Logs(), -1) {
		if i == 0 {
			t.Logf("FIGURES %s: logged %q", h.fig.fault, m[0])
		}
		took, err := time.ParseDuration(m[1])
		if err != nil || took < queryTimeout || took > refreshTimeout+margin {
			t.Errorf("connect step logged as %q, want the real time: at least --db.query-timeout %s, at most --refresh.timeout %s (+%s)",
				m[0], queryTimeout, refreshTimeout, margin)
		}
	}
	remove()
	h.recovered(2*refreshTimeout + margin)
	h.waitLog("refresh recovered")
	h.finish()
}

func TestPostgreSQLConnectUnanswered(t *testing.T) { connectUnanswered(t, postgres()) }

func TestMariaDBConnectUnanswered(t *testing.T) { connectUnanswered(t, mariadb()) }
