package collector

import (
	"compress/flate"
	"context"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Nova's families: the Nova side of every Ironic node (novacache). Label
// names in name order, as every family's.
var (
	novaAPIUpFamily = makeFamily(namespace+"_exporter_nova_api_up",
		"1 when the latest read of Nova's nova_api database (its cells) worked, else 0: the Nova answers are then the last read's.")
	novaCellUpFamily = makeFamily(namespace+"_exporter_nova_cell_up",
		"1 when the latest read of the Nova cell's database worked, else 0: its answers are then from the rows of its last good read.", "cell")
	novaCellReadFamily = makeFamily(namespace+"_exporter_nova_cell_last_read_timestamp_seconds",
		"When the rows the Nova cell's answers are computed from were read; absent before the first good read.", "cell")
	novaCellWarningsFamily = makeFamily(namespace+"_exporter_nova_snapshot_warnings",
		"Values of the Nova cell's latest read kept with a warning, by table and reason (bad_value: a value its column's type cannot hold, read as NULL; unknown_version: a nova-compute's services.version of no known release).",
		"cell", "reason", "table")
	novaCellConnectionFamily = makeFamily(namespace+"_exporter_nova_cell_connection_info",
		`Which credentials the exporter reads the Nova cell with: credentials="template" (--nova.cell-dsn-template, the exporter's own user) or "cell_mappings" (the cell's URL in nova_api, Nova's own read-write user); user is the database user ("" when not known).`,
		"cell", "credentials", "user")
	novaComputesFamily = makeFamily(namespace+"_exporter_nova_computes_settings_info",
		`Where the ironic nova-computes' own settings come from: source="file" (--nova.computes-file) or "assumed" (no file: every compute taken with no [ironic] option set, exact only for those).`,
		"source")
	novaLivenessFamily = makeFamily(namespace+"_exporter_nova_compute_liveness_known",
		`1 when Nova's database says which nova-computes are up (servicegroup_driver "db"), 0 when another driver keeps the heartbeats (e.g. "mc", memcached): ironic_nova_compute_up, _heartbeat_timestamp_seconds and _ring_member are then absent but for computes forced down, and the rings are computed with every compute taken as up.`,
		"servicegroup_driver")
	novaComputeUpFamily = makeFamily(namespace+"_nova_compute_up",
		"1 when Nova's servicegroup says the ironic nova-compute is up (not forced down, heartbeat within service_down_time), else 0; absent when the liveness is unknown (ironic_exporter_nova_compute_liveness_known).", "cell", "host")
	novaComputeHeartbeatFamily = makeFamily(namespace+"_nova_compute_heartbeat_timestamp_seconds",
		"The ironic nova-compute's last heartbeat (services.last_seen_up, or created_at when it never reported), nova-conductor's clock.", "cell", "host")
	novaComputeDisabledFamily = makeFamily(namespace+"_nova_compute_disabled",
		"1 when the ironic nova-compute's service is disabled (it still manages its nodes, but no ring holds it).", "cell", "host")
	novaComputeForcedDownFamily = makeFamily(namespace+"_nova_compute_forced_down",
		"1 when the ironic nova-compute's service is forced down.", "cell", "host")
	novaComputeRingFamily = makeFamily(namespace+"_nova_compute_ring_member",
		"1 when the ironic nova-compute is in the other computes' hash rings (enabled and up; peer_list may still leave it out of some), else 0.", "cell", "host")
	novaComputeNodesFamily = makeFamily(namespace+"_nova_compute_nodes",
		"Ironic nodes the nova-compute manages in its own view, by why (instance: its instance is the compute's; ring: it owns the node on its ring; a compute that is down, by instance only).",
		"cell", "host", "source")
	novaComputeErrorFamily = makeFamily(namespace+"_nova_compute_refresh_failing",
		"1 when the nova-compute's settings make its node refresh raise (InvalidPeerList): it keeps what it managed before.", "cell", "host")
	nodeNovaComputeFamily = makeFamily(namespace+"_node_nova_compute_info",
		`The nova-compute that manages the Ironic node, 1 per view that claims it (source instance or ring); nova_compute="" and source="none" when no view does.`,
		"cell", "node_uuid", "nova_compute", "source")
	novaTableReadsFamily = makeFamily(namespace+"_exporter_nova_table_reads_total",
		"Reads of the Nova cells' compute_nodes and instances since start, by whether the rows were read again (read) or their probe unchanged spared it (reused).",
		"kind", "table")
	novaProblemsFamily = makeFamily(namespace+"_nova_problems",
		"What is wrong between Ironic and Nova, by reason: nodes (or compute_nodes rows, or instances) counted once per reason.", "reason")

	novaFamilies = []*family{novaAPIUpFamily, novaCellUpFamily, novaCellReadFamily, novaCellWarningsFamily, novaCellConnectionFamily, novaComputesFamily, novaLivenessFamily, novaComputeUpFamily,
		novaComputeHeartbeatFamily, novaComputeDisabledFamily, novaComputeForcedDownFamily, novaComputeRingFamily,
		novaComputeNodesFamily, novaComputeErrorFamily, nodeNovaComputeFamily, novaTableReadsFamily, novaProblemsFamily}
)

// NovaCollector exports the Nova answer of a novacache.Cache: through a
// registry for the protobuf exposition, and to the text exposition as
// pieces rendered and compressed once per answer (Pieces): rendering the
// node series through client_golang at every scrape would take most of the
// steady-state CPU row of docs/performance.md (BenchmarkNova).
type NovaCollector struct {
	cache *novacache.Cache
	opts  ExporterOptions

	mu     sync.Mutex
	state  *novacache.State
	pieces []*exposition.Piece
	// node is the node family's piece, kept while the answer's claims are
	// the same (a refresh that kept the views and Fleet): rendering and
	// compressing 100k series at every Nova refresh (15 s) would cost 1.5%
	// of a core of the steady-state CPU row's 2%.
	node      *exposition.Piece
	nodeFleet *nova.Fleet
}

var _ prometheus.Collector = (*NovaCollector)(nil)

// NewNovaCollector returns the collector of cache's answers. opts.NodeInfo
// decides, as for Ironic's families, whether the per-node family
// (ironic_node_nova_compute_info) is exported.
func NewNovaCollector(cache *novacache.Cache, opts ExporterOptions) *NovaCollector {
	return &NovaCollector{cache: cache, opts: opts}
}

// Describe implements prometheus.Collector.
func (c *NovaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range novaFamilies {
		ch <- f.desc
	}
}

// Collect implements prometheus.Collector.
func (c *NovaCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(f *family, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(f.desc, f.Type, v, labels...)
	}
	s := c.cache.Get(context.Background())
	collectNova(emit, s)
	if c.opts.NodeInfo {
		collectNovaNodes(emit, s)
	}
}

// Pieces are the text exposition's pieces of the answer the cache gives
// within ctx (novacache.Cache.Get), rendered and compressed once per
// answer.
func (c *NovaCollector) Pieces(ctx context.Context) []*exposition.Piece {
	s := c.cache.Get(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == s {
		return slices.Clone(c.pieces) // exposition.Write sorts what it is given
	}
	fw := exposition.NewFlate(flate.BestSpeed) // once per answer
	if !c.opts.NodeInfo {
		c.node, c.nodeFleet = nil, nil
	} else if c.node == nil || s.Fleet != c.nodeFleet {
		c.node, c.nodeFleet = nil, nil
		// A series per node, written straight into the compressor and
		// kept compressed only (written again for a plain scrape): its text
		// kept would break the memory row.
		if s.Fleet != nil && s.Fleet.Len() > 0 {
			z := exposition.NewCompressor(fw)
			_ = writeNovaNodeFamily(z, s) // into memory: no error
			c.node, c.nodeFleet = &exposition.Piece{Name: nodeNovaComputeFamily.Name, Stream: novaNodeStream{s, z.Finish()}}, s.Fleet
		}
	}
	tf := exposition.Families{}
	collectNova(textEmit(tf), s)
	var pieces []*exposition.Piece
	tf.Each(func(name string, text []byte) { pieces = append(pieces, exposition.NewPiece(name, text, fw)) })
	if c.node != nil {
		pieces = append(pieces, c.node)
	}
	c.state, c.pieces = s, pieces
	return slices.Clone(pieces)
}

// novaNodeStream is the node family of an answer: its gzip chunk, and its
// text rendered at each plain scrape.
type novaNodeStream struct {
	state *novacache.State
	z     exposition.Chunk
}

// WriteText implements exposition.Stream.
func (n novaNodeStream) WriteText(w io.Writer) error { return writeNovaNodeFamily(w, n.state) }

// Gzipped implements exposition.Stream.
func (n novaNodeStream) Gzipped() *exposition.Chunk { return &n.z }

// writeNovaNodeFamily writes the node family of s (its Fleet's claims) to w
// in the bytes and the order client_golang's registry writes it
// (TestNovaPiecesArePromhttp, TestNovaNodeFamilyOrder): series by label values, that is by
// cell, then node_uuid, nova_compute (a node's claims are sorted by cell
// and host) and source, with an exposition.SeriesWriter.
func writeNovaNodeFamily(w io.Writer, s *novacache.State) error {
	cells := map[string]bool{}
	for i := range s.Fleet.Len() {
		claimed := false
		for cl := range s.Fleet.Claims(i) {
			cells[cl.Cell], claimed = true, true
		}
		cells[""] = cells[""] || !claimed
	}
	sw := exposition.NewSeriesWriter(w, &nodeNovaComputeFamily.Family)
	for _, cell := range slices.Sorted(maps.Keys(cells)) {
		for i := range s.InUUIDOrder() {
			claimed := false
			for cl := range s.Fleet.Claims(i) {
				if claimed = true; cl.Cell == cell {
					sw.Series(1, cell, s.UUID(i), cl.Host, cl.Source)
				}
			}
			if !claimed && cell == "" {
				sw.Series(1, "", s.UUID(i), "", "none")
			}
		}
	}
	return sw.Close()
}

// collectNovaNodes emits the node family of s, a series per node, which
// Pieces writes with writeNovaNodeFamily instead.
func collectNovaNodes(emit emitFunc, s *novacache.State) {
	if s.ReadAt.IsZero() || s.Fleet == nil {
		return
	}
	for i := range s.Fleet.Len() {
		claimed := false
		for cl := range s.Fleet.Claims(i) {
			claimed = true
			emit(nodeNovaComputeFamily, 1, cl.Cell, s.UUID(i), cl.Host, cl.Source)
		}
		if !claimed {
			emit(nodeNovaComputeFamily, 1, "", s.UUID(i), "", "none")
		}
	}
}

// collectNova emits the families of s but its node family (collectNovaNodes).
func collectNova(emit emitFunc, s *novacache.State) {
	emit(novaAPIUpFamily, boolValue(s.Err == nil && !s.ReadAt.IsZero()))
	source := "file"
	if s.Assumed {
		source = "assumed"
	}
	emit(novaComputesFamily, 1, source)
	driver := s.ServicegroupDriver
	if driver == "" {
		driver = "db"
	}
	known := rules.NovaSettings{ServicegroupDriver: driver}.LivenessKnown()
	emit(novaLivenessFamily, boolValue(known), driver)
	if s.ReadAt.IsZero() {
		return // nothing read yet: no answer to give
	}
	for _, cell := range s.Cells {
		emit(novaCellUpFamily, boolValue(cell.Err == nil), cell.Name)
		emit(novaCellConnectionFamily, 1, cell.Name, cell.Credentials, cell.User)
		if !cell.ReadAt.IsZero() {
			emit(novaCellReadFamily, unixSeconds(cell.ReadAt), cell.Name)
		}
		for _, w := range cell.RowWarnings {
			emit(novaCellWarningsFamily, float64(w.Rows), cell.Name, w.Reason, w.Table)
		}
		for _, cs := range cell.Computes {
			if cs.UpKnown {
				emit(novaComputeUpFamily, boolValue(cs.Up), cell.Name, cs.Host)
				emit(novaComputeRingFamily, boolValue(cs.RingMember()), cell.Name, cs.Host)
			}
			if !cs.Heartbeat.IsZero() && known {
				emit(novaComputeHeartbeatFamily, unixSeconds(cs.Heartbeat), cell.Name, cs.Host)
			}
			emit(novaComputeDisabledFamily, boolValue(cs.Disabled), cell.Name, cs.Host)
			emit(novaComputeForcedDownFamily, boolValue(cs.ForcedDown), cell.Name, cs.Host)
		}
		for _, v := range cell.Views {
			emit(novaComputeErrorFamily, boolValue(v.Err != nil), cell.Name, v.Host)
			byInstance, byRing := v.ByInstance, v.ByRing
			emit(novaComputeNodesFamily, float64(byInstance), cell.Name, v.Host, "instance")
			emit(novaComputeNodesFamily, float64(byRing), cell.Name, v.Host, "ring")
		}
	}
	if s.Fleet != nil {
		for _, r := range nova.ProblemReasons {
			emit(novaProblemsFamily, float64(s.Fleet.Problems[r]), r)
		}
	}
	for _, table := range []string{"compute_nodes", "instances"} {
		emit(novaTableReadsFamily, float64(s.TableReads[table].Read), "read", table)
		emit(novaTableReadsFamily, float64(s.TableReads[table].Reused), "reused", table)
	}
}
