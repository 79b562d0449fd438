package collector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
)

// Nova's families: the Nova side of every Ironic node (novacache).
var (
	novaAPIUpDesc = prometheus.NewDesc(namespace+"_exporter_nova_api_up",
		"1 when the latest read of Nova's nova_api database (its cells) worked, else 0: the Nova answers are then the last read's.",
		nil, nil)
	novaCellUpDesc = prometheus.NewDesc(namespace+"_exporter_nova_cell_up",
		"1 when the latest read of the Nova cell's database worked, else 0: its answers are then from the rows of its last good read.",
		[]string{"cell"}, nil)
	novaCellReadDesc = prometheus.NewDesc(namespace+"_exporter_nova_cell_last_read_timestamp_seconds",
		"When the rows the Nova cell's answers are computed from were read; absent before the first good read.",
		[]string{"cell"}, nil)
	novaComputesDesc = prometheus.NewDesc(namespace+"_exporter_nova_computes_settings_info",
		`Where the ironic nova-computes' own settings come from: source="file" (--nova.computes-file) or "assumed" (no file: every compute taken with no [ironic] option set, exact only for those).`,
		[]string{"source"}, nil)
	novaComputeUpDesc = prometheus.NewDesc(namespace+"_nova_compute_up",
		"1 when Nova's servicegroup says the ironic nova-compute is up (not forced down, heartbeat within service_down_time), else 0.",
		[]string{"cell", "host"}, nil)
	novaComputeHeartbeatDesc = prometheus.NewDesc(namespace+"_nova_compute_heartbeat_timestamp_seconds",
		"The ironic nova-compute's last heartbeat (services.last_seen_up, or created_at when it never reported), nova-conductor's clock.",
		[]string{"cell", "host"}, nil)
	novaComputeDisabledDesc = prometheus.NewDesc(namespace+"_nova_compute_disabled",
		"1 when the ironic nova-compute's service is disabled (it still manages its nodes, but no ring holds it).",
		[]string{"cell", "host"}, nil)
	novaComputeForcedDownDesc = prometheus.NewDesc(namespace+"_nova_compute_forced_down",
		"1 when the ironic nova-compute's service is forced down.",
		[]string{"cell", "host"}, nil)
	novaComputeRingDesc = prometheus.NewDesc(namespace+"_nova_compute_ring_member",
		"1 when the ironic nova-compute is in the other computes' hash rings (enabled and up; peer_list may still leave it out of some), else 0.",
		[]string{"cell", "host"}, nil)
	novaComputeNodesDesc = prometheus.NewDesc(namespace+"_nova_compute_nodes",
		"Ironic nodes the nova-compute manages in its own view, by why (instance: its instance is the compute's; ring: it owns the node on its ring).",
		[]string{"cell", "host", "source"}, nil)
	novaComputeErrorDesc = prometheus.NewDesc(namespace+"_nova_compute_refresh_failing",
		"1 when the nova-compute's settings make its node refresh raise (InvalidPeerList): it keeps what it managed before.",
		[]string{"cell", "host"}, nil)
	nodeNovaComputeDesc = prometheus.NewDesc(namespace+"_node_nova_compute_info",
		`The nova-compute that manages the Ironic node, 1 per view that claims it (source instance or ring); nova_compute="" and source="none" when no view does.`,
		[]string{"node_uuid", "cell", "nova_compute", "source"}, nil)
	novaProblemsDesc = prometheus.NewDesc(namespace+"_nova_problems",
		"What is wrong between Ironic and Nova, by reason: nodes (or compute_nodes rows, or instances) counted once per reason.",
		[]string{"reason"}, nil)
)

// NovaCollector exports the Nova answer of a novacache.Cache. The metrics
// of one answer are built once and sent to every scrape of it.
type NovaCollector struct {
	cache *novacache.Cache

	mu    sync.Mutex
	state *novacache.State
	built []prometheus.Metric
}

var _ prometheus.Collector = (*NovaCollector)(nil)

// NewNovaCollector returns the collector of cache's answers.
func NewNovaCollector(cache *novacache.Cache) *NovaCollector { return &NovaCollector{cache: cache} }

// Describe sends the descriptors of Nova's families.
func (c *NovaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{novaAPIUpDesc, novaCellUpDesc, novaCellReadDesc, novaComputesDesc,
		novaComputeUpDesc, novaComputeHeartbeatDesc, novaComputeDisabledDesc, novaComputeForcedDownDesc,
		novaComputeRingDesc, novaComputeNodesDesc, novaComputeErrorDesc, nodeNovaComputeDesc, novaProblemsDesc} {
		ch <- d
	}
}

// Collect sends the metrics of the latest answer.
func (c *NovaCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.cache.Current()
	c.mu.Lock()
	if c.state != s {
		c.state, c.built = s, buildNova(s)
	}
	built := c.built
	c.mu.Unlock()
	for _, m := range built {
		ch <- m
	}
}

// buildNova builds the metrics of s.
func buildNova(s *novacache.State) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	add(novaAPIUpDesc, boolValue(s.Err == nil && !s.ReadAt.IsZero()))
	source := "file"
	if s.Assumed {
		source = "assumed"
	}
	add(novaComputesDesc, 1, source)
	if s.ReadAt.IsZero() {
		return out // nothing read yet: no answer to give
	}
	for _, cell := range s.Cells {
		add(novaCellUpDesc, boolValue(cell.Err == nil), cell.Name)
		if !cell.ReadAt.IsZero() {
			add(novaCellReadDesc, unixSeconds(cell.ReadAt), cell.Name)
		}
		for _, cs := range cell.Computes {
			add(novaComputeUpDesc, boolValue(cs.Up), cell.Name, cs.Host)
			if !cs.Heartbeat.IsZero() {
				add(novaComputeHeartbeatDesc, unixSeconds(cs.Heartbeat), cell.Name, cs.Host)
			}
			add(novaComputeDisabledDesc, boolValue(cs.Disabled), cell.Name, cs.Host)
			add(novaComputeForcedDownDesc, boolValue(cs.ForcedDown), cell.Name, cs.Host)
			add(novaComputeRingDesc, boolValue(cs.RingCandidate && cs.Up), cell.Name, cs.Host)
		}
		for _, v := range cell.Views {
			add(novaComputeErrorDesc, boolValue(v.Err != nil), cell.Name, v.Host)
			counts := map[string]int{"instance": 0, "ring": 0}
			for _, src := range v.Nodes {
				counts[string(src)]++
			}
			for _, src := range []string{"instance", "ring"} {
				add(novaComputeNodesDesc, float64(counts[src]), cell.Name, v.Host, src)
			}
		}
	}
	for i, n := range s.Nodes {
		claims := s.Fleet.Claims[i]
		if len(claims) == 0 {
			add(nodeNovaComputeDesc, 1, n.UUID, "", "", "none")
		}
		for _, cl := range claims {
			add(nodeNovaComputeDesc, 1, n.UUID, cl.Cell, cl.Host, cl.Source)
		}
	}
	for _, r := range nova.ProblemReasons {
		add(novaProblemsDesc, float64(s.Fleet.Problems[r]), r)
	}
	return out
}
