package collector

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// clientGolangNodeFamily is the reference rendering of the node family:
// client_golang's own path, a registry gathering collectNodeInfo over all
// the nodes (it checks the series and sorts them) and expfmt's text encoder.
func clientGolangNodeFamily(t *testing.T, topo *topology.Topology) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(nodeInfoCollector{topo})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering the node family: %v", err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatalf("encoding the node family: %v", err)
		}
	}
	return b.Bytes()
}

// writtenNodeFamily is writeNodeFamily's rendering of topo; it also checks
// that every write but the last is a full buffer.
func writtenNodeFamily(t *testing.T, topo *topology.Topology) []byte {
	t.Helper()
	var w writesRecorder
	if err := writeNodeFamily(&w, topo, nodeInfoOrder(topo)); err != nil {
		t.Fatal(err)
	}
	for i, n := range w.sizes {
		if i < len(w.sizes)-1 && n < exposition.SeriesFlush {
			t.Errorf("write %d of %d: %d bytes, under the %d buffered", i, len(w.sizes), n, exposition.SeriesFlush)
		}
	}
	return w.Bytes()
}

type writesRecorder struct {
	bytes.Buffer
	sizes []int
}

func (w *writesRecorder) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// nodesTopology is a topology holding only nodes, each given as its
// conductor, group, driver, name (nil: none) and UUID, which is all the
// node family reads.
func nodesTopology(nodes ...[5]*string) *topology.Topology {
	t := &topology.Topology{NodeResults: topology.NodeResults{Nodes: make([]topology.NodeInfo, len(nodes))}}
	for i, n := range nodes {
		t.Nodes[i] = topology.NodeInfo{Conductor: *n[0],
			Node: &db.Node{ID: int64(i + 1), ConductorGroup: *n[1], Driver: *n[2], Name: n[3], UUID: *n[4]}}
	}
	return t
}

// hostile are label values that need escaping, sort unlike their
// characters' order, or are empty.
var hostile = []string{"", `"`, `\`, "\n", `\n`, `\"`, "a\\", "a\"b\nc\\d", "\r\t", "\x00", "x\x00",
	"ä", "ü-node", "日本語", "\uFFFD", "\u2028", "🙂", "A", "a", "a ", "{}", `",node_uuid="x`, "conductor-1.example.com"}

// TestNodeFamilyIsClientGolang: writeNodeFamily writes, byte for byte,
// what client_golang's registry and text encoder make of the same nodes:
// no nodes; hostile label values in every label, with and without a name
// and a conductor; long runs sharing conductor, group and driver; and
// topologies Build made (conductors, rings, unserved groups).
func TestNodeFamilyIsClientGolang(t *testing.T) {
	p := fixture.Ptr
	cases := map[string]*topology.Topology{"no nodes": nodesTopology()}
	var all [][5]*string
	for i, s := range hostile {
		for field := 0; field < 5; field++ {
			n := [5]*string{p("c1"), p("g"), p("ipmi"), p("n" + strconv.Itoa(i)), p("uuid-" + strconv.Itoa(i))}
			n[field] = p(s)
			if field == 4 {
				n[3] = nil
			}
			if field == 3 || field == 4 {
				n[4] = p(s + "#" + strconv.Itoa(len(all))) // UUIDs are unique
			}
			all = append(all, n)
		}
		all = append(all, [5]*string{p(""), p(s), p(s), nil, p("orphan-" + strconv.Itoa(i))}) // no conductor
	}
	cases["hostile label values"] = nodesTopology(all...)
	var runs [][5]*string
	for i := range 3000 {
		runs = append(runs, [5]*string{p(hostile[i%7]), p(hostile[i/7%3]), p("redfish"), p("node-" + strconv.Itoa(i)),
			p(strconv.Itoa(i))})
	}
	cases["runs of conductor, group, driver"] = nodesTopology(runs...)
	for name, snap := range map[string]*db.Snapshot{
		"golden":          fixture.Golden(),
		"several flushes": prerenderFleet(3*4096 + 17),
		"bench fleet":     benchSnapshot(20_000),
	} {
		topo, err := topology.Build(snap, testSettings, testNow, nil)
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = topo
	}
	for name, topo := range cases {
		want := clientGolangNodeFamily(t, topo)
		got := writtenNodeFamily(t, topo)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: writeNodeFamily differs from client_golang at byte %d:\n got %q\nwant %q",
				name, firstDiff(got, want), around(got, firstDiff(got, want)), around(want, firstDiff(got, want)))
		}
		if lines := bytes.Count(got, []byte("\n")); len(topo.Nodes) > 0 && lines != len(topo.Nodes)+2 {
			t.Errorf("%s: %d lines for %d nodes", name, lines, len(topo.Nodes))
		}
	}
}

func firstDiff(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func around(b []byte, i int) []byte {
	return b[max(0, i-80):min(len(b), i+80)]
}

// FuzzNodeFamily: for any label values (made valid UTF-8, as the database
// reader makes them), writeNodeFamily writes what client_golang writes.
func FuzzNodeFamily(f *testing.F) {
	for i := 0; i+4 < len(hostile); i++ {
		f.Add(hostile[i], hostile[i+1], hostile[i+2], hostile[i+3], hostile[i+4], i%2 == 0)
	}
	f.Add("", "", "", "", "", false)
	f.Fuzz(func(t *testing.T, a, b, c, d, e string, named bool) {
		vals := []string{a, b, c, d, e}
		for i, v := range vals {
			if !utf8.ValidString(v) {
				vals[i] = strings.ToValidUTF8(v, "\uFFFD") // as db's reader
			}
		}
		// Five nodes, each label taking every value in turn; the UUIDs made
		// unique, as Ironic's schema makes them.
		var nodes [][5]*string
		for k := range 5 {
			var n [5]*string
			for field := range 5 {
				v := vals[(k+field)%5]
				n[field] = &v
			}
			uuid := *n[4] + "#" + strconv.Itoa(k)
			n[4] = &uuid
			if !named && k%2 == 1 {
				n[3] = nil
			}
			nodes = append(nodes, n)
		}
		topo := nodesTopology(nodes...)
		if got, want := writtenNodeFamily(t, topo), clientGolangNodeFamily(t, topo); !bytes.Equal(got, want) {
			t.Errorf("writeNodeFamily differs from client_golang:\n got %q\nwant %q", got, want)
		}
	})
}

// TestHelpEscaper: the node family's HELP line is escaped as expfmt
// escapes help texts.
func TestHelpEscaper(t *testing.T) {
	for _, help := range append(hostile, nodeInfoHelp) {
		var b bytes.Buffer
		name, one := "x", 1.0
		mf := &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &one}}}}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
		want, _, _ := strings.Cut(b.String(), "\n# TYPE")
		f := exposition.Family{Name: "x", Help: help, Type: prometheus.GaugeValue}
		if got := strings.TrimSuffix(string(exposition.AppendHead(nil, &f)), "\n# TYPE x gauge\n"); got != want {
			t.Errorf("help %q escaped as %q, expfmt writes %q", help, got, want)
		}
	}
}

// TestHostileExpositionPromtool: /metrics of a fleet with hostile label
// values in every node label, through the production handler, passes
// `promtool check metrics`, plain and gzip alike.
func TestHostileExpositionPromtool(t *testing.T) {
	testenv.Need(t, testenv.Promtool)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal(err)
	}
	snap := fixture.Golden()
	for i, s := range hostile {
		nd := fixture.Node(int64(100+i), s+"#"+strconv.Itoa(i), []string{"", "rack2", s}[i%3], []string{"ipmi", s}[i%2])
		nd.Name = fixture.Ptr(s + "-" + strconv.Itoa(i))
		snap.Nodes = append(snap.Nodes, nd)
	}
	snap.Conductors = append(snap.Conductors, fixture.Conductor(9, `c"\`+"\n", "", true, fixture.Ago(time.Second), "ipmi"))
	cache := newTestCache(t, fixture.NewSource(snap), time.Minute)
	h := metricsHandler(cache, ExporterOptions{NodeInfo: true})
	plain, _ := get(t, h, "")
	if gz, _ := get(t, h, "gzip"); !bytes.Equal(gz, plain) {
		t.Errorf("gzip exposition (%d bytes) differs from the plain one (%d bytes)", len(gz), len(plain))
	}
	if n := bytes.Count(plain, []byte("\n"+nodeInfoName+"{")); n != len(snap.Nodes) {
		t.Errorf("%d node series, want %d", n, len(snap.Nodes))
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(plain)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// nodeInfoCollector emits ironic_node_conductor_info of one topology.
type nodeInfoCollector struct{ t *topology.Topology }

func (c nodeInfoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodeInfoFamily.desc }
func (c nodeInfoCollector) Collect(ch chan<- prometheus.Metric) {
	collectNodeInfo(func(f *family, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(f.desc, f.Type, v, labels...)
	}, c.t)
}
