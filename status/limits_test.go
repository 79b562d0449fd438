package status

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestLimits: the page shows each group against Ironic's concurrency
// limits, and the summary says which new actions Ironic refuses: once per
// action over every node, per group with per-group limits (35.0+).
func TestLimits(t *testing.T) {
	page := func(release string, perGroup bool) string {
		s := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5,
			MaxConcurrentDeploy: 1, MaxConcurrentClean: 5, MaxConcurrentPerConductorGroup: perGroup}, Release: rules.MustRelease(release)}
		cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(degradedSnapshot()), Settings: s})
		if err != nil {
			t.Fatal(err)
		}
		_, body := get(t, NewHandler(cache, Options{Version: "1.2.3"}), "/")
		return body
	}
	// degradedSnapshot: one deploy in wait call-back, in group "".
	body := page("29.0", true)
	for _, want := range []string{
		`<li class="warn"><a href="/#limits-h">Ironic refuses new deploys of any node: 1 in flight, max_concurrent_deploy is 1.</a></li>`,
		`counted over every node.</caption>`,
		`<tr><td>deploy</td><td>(default)</td><td class="num">1</td><td class="num">1</td><td class="num">1</td><td class="num dead">0</td></tr>`,
		`<tr><td>deploy</td><td>rack1</td><td class="num">0</td><td class="num">1</td><td class="num">1</td><td class="num dead">0</td></tr>`,
		`<tr><td>clean</td><td>rack1</td><td class="num">0</td><td class="num">0</td><td class="num">5</td><td class="num">5</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("29.0 (per group asked, not honoured): page lacks %s", want)
		}
	}
	if strings.Count(body, "Ironic refuses new") != 1 {
		t.Error("29.0: the global limit is said more than once")
	}
	body = page("35.0", true)
	for _, want := range []string{
		`<li class="warn"><a href="/#limits-h">Ironic refuses new deploys in conductor group (default): 1 in flight, max_concurrent_deploy is 1.</a></li>`,
		`counted in each conductor group apart.</caption>`,
		`<tr><td>deploy</td><td>rack1</td><td class="num">0</td><td class="num">0</td><td class="num">1</td><td class="num">1</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("35.0 per group: page lacks %s", want)
		}
	}
	if body := page("21.0", false); strings.Contains(body, `id="limits-h"`) || strings.Contains(body, "Ironic refuses new") {
		t.Error("21.0 has no limits, the page shows some")
	}
}

// TestFaults: a node Ironic faulted shows in the summary, in the faults
// section and in its lookup; its health too.
func TestFaults(t *testing.T) {
	snap := degradedSnapshot()
	snap.Nodes[0].Maintenance, snap.Nodes[0].Fault, snap.Nodes[0].Health = true, strp("power failure"), strp("Critical")
	h := newHandler(t, fixture.NewSource(snap))
	_, body := get(t, h, "/")
	for _, want := range []string{
		`<li class="warn"><a href="/#faults-h">1 node(s) put in maintenance by Ironic itself (a power, cleaning, rescue or service failure).</a></li>`,
		`<td class="num dead">1</td></tr>`,
		`<td>power failure</td>`,
		`<li class="warn">1 node(s) whose BMC reports Critical hardware health.</li>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	_, body = get(t, h, "/?node="+snap.Nodes[0].UUID)
	if !strings.Contains(body, `<dt>Maintenance</dt><dd>yes, <span class="dead">set by Ironic: power failure</span></dd>`) {
		t.Error("the lookup does not say Ironic set the maintenance")
	}
	if !strings.Contains(body, `<dt>Hardware health</dt><dd class="dead">Critical (the BMC, at the last power sync)</dd>`) {
		t.Error("the lookup does not show the node's health")
	}
	_, body = get(t, newHandler(t, fixture.NewSource(degradedSnapshot())), "/")
	if !strings.Contains(body, "No node is in maintenance by Ironic's own decision.") || strings.Contains(body, "put in maintenance by Ironic itself") {
		t.Error("no fault, yet the page reports one")
	}
}

// TestUnregisteredDrivers: the summary names a hardware type no conductor
// registers, and says when the release removed it.
func TestUnregisteredDrivers(t *testing.T) {
	snap := degradedSnapshot()
	snap.Nodes[0].Driver = "irmc"
	snap.Nodes[1].Driver = "xclarity"
	s := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5},
		Release: rules.MustRelease("36.0")}
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, NewHandler(cache, Options{Version: "1.2.3"}), "/")
	for _, want := range []string{
		`1 node(s) use hardware type irmc, which no conductor registers: Ironic removed it in 36.0; move them to another hardware type (baremetal node set --driver).`,
		`1 node(s) use hardware type xclarity, which no conductor registers: Ironic removed it in 26.0;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestConductorLimits: a conductor's page shows its own nodes in flight
// against its group's concurrency limits, and says when Ironic refuses.
func TestConductorLimits(t *testing.T) {
	s := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5,
		MaxConcurrentDeploy: 1, MaxConcurrentClean: 5}, Release: rules.MustRelease("29.0")}
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(degradedSnapshot()), Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(cache, Options{Version: "1.2.3"})
	// degradedSnapshot: web-3 waits for its call-back in group "", mapped to cond-a or cond-c
	var mine int
	for _, host := range []string{"cond-a.example.com:6385", "cond-c"} {
		_, body := get(t, h, "/?conductor="+url.QueryEscape(host))
		i := strings.Index(body, `<dd id="c-limits">`)
		if i < 0 {
			t.Fatalf("%s: no in-flight line", host)
		}
		line := body[i : i+strings.Index(body[i:], "</dd>")]
		if !strings.Contains(line, `Ironic counts 1 against max_concurrent_deploy 1, <span class="dead">refusing new ones</span>`) ||
			!strings.Contains(line, "clean: 0 of its nodes; Ironic counts 0 against max_concurrent_clean 5, <span>5 more accepted</span>") {
			t.Errorf("%s: %s", host, line)
		}
		if strings.Contains(line, "deploy: 1 of its nodes") {
			mine++
		}
	}
	if mine != 1 {
		t.Errorf("web-3's deploy counted on %d conductors' pages, want 1", mine)
	}
}
