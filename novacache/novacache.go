// Package novacache keeps the Nova side of the answer: it reads Nova's
// databases (package novadb) at an interval, joins each cell's rows with
// Ironic's nodes of the current topology, and computes with package nova
// every compute's view. Readers take the latest answer without waiting: a
// read never holds a lookup. A Nova outage leaves the last answer in
// place, marked stale (State.Err, CellState.Err); the Ironic answers do
// not depend on it.
package novacache

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// Reader reads Nova's databases; *novadb.Reader is the production one.
type Reader interface {
	Read(ctx context.Context, hosts []string) (*novadb.Snapshot, error)
}

// Config configures a Cache.
type Config struct {
	Reader Reader
	// Ironic is the current Ironic topology (topology.Cache.Current); the
	// answer is computed over its nodes, none until it has one.
	Ironic func() *topology.Topology
	// Settings are Nova's [DEFAULT] service_down_time and report_interval.
	Settings rules.NovaSettings
	// Computes is the computes file; nil: every ironic compute, with no
	// [ironic] option set (nova.DefaultComputes).
	Computes *nova.ComputesFile
	// Interval between reads; default 15s (Nova's services write their
	// heartbeat every report_interval, 10s by default).
	Interval time.Duration
	// Timeout bounds one read; default 30s.
	Timeout time.Duration
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// AnswerReplaced, when set, runs after a refresh that computed a new
	// answer (not one that kept the last, see inputs), once the cache no
	// longer holds the one it replaced: the binary's memory policy
	// (internal/memlimit) collects it then and counts the new one in the
	// soft memory limit. idle is the Ironic cache's: whether no Ironic
	// refresh runs.
	AnswerReplaced func(idle func() bool)
	// Idle reports whether no Ironic refresh runs, for AnswerReplaced;
	// default always.
	Idle func() bool
}

// State is the latest answer.
type State struct {
	// Cells are the cells' answers, in cell_mappings' order.
	Cells []CellState
	// ReadAt is when the last read that reached nova_api started; zero
	// before the first.
	ReadAt time.Time
	// Err is why the last read failed as a whole (nova_api); Cells are then
	// those of the read before.
	Err error
	// TableReads count, since start, the cells' reads of compute_nodes and
	// instances that read the rows again (Read) and that reused the last
	// ones, their probes unchanged (Reused).
	TableReads map[string]TableReads
	// Fleet is the cells' answers joined over the Ironic nodes the answer
	// covers (UUID); nil before the first answer.
	Fleet *nova.Fleet
	// Assumed: no computes file, every compute taken with no [ironic]
	// option set.
	Assumed bool
	// ServicegroupDriver is Nova's [DEFAULT]servicegroup_driver: with any
	// but "db" the computes' liveness is not in the database
	// (rules.NovaSettings.LivenessKnown).
	ServicegroupDriver string

	// nodes are the Ironic nodes the answer covers, in id order (those of
	// the latest topology, or of one whose nodes Nova's node list gives
	// the same: sameNodes), and byUUID their indexes sorted by uuid.
	// Pointers and indexes, not copies: at 100k nodes a copy of what Nova
	// reads of each node took 12.8 MB of the live heap, whose row in the
	// README's Performance table is 600 B/node with Nova configured.
	nodes  []*db.Node
	byUUID []int32
	// inputs are what the views and Fleet were computed from.
	inputs inputs
}

// inputs are what a refresh's views and Fleet depend on besides Ironic's
// nodes (compared field by field, sameNodes), compared to spare computing
// them again: per cell its compute nodes and instances (slices novadb
// reuses while their probes are unchanged) and its services as judged now
// (every field the answer reads but the heartbeat's time). At 100k nodes and 100 computes a refresh that
// computes them takes 200 ms (BenchmarkNova); every 15 s that is 1.3% of a
// core, most of the steady-state CPU row's 2% (README, Performance).
type inputs struct {
	cells []cellInputs
}

type cellInputs struct {
	uuid          string
	computeNodes  *nova.ComputeNode
	computeCount  int
	instances     *nova.Instance
	instanceCount int
	services      string // id, host, binary, flags, version and up of each row
	softDeleted   string // SoftDeletedHosts
}

// inputsOf are the inputs of an answer over t's nodes and snap's cells at
// now.
func (c *Cache) inputsOf(snap *novadb.Snapshot, now time.Time) inputs {
	var in inputs
	for _, cr := range snap.Cells {
		ci := cellInputs{uuid: cr.Cell.UUID, computeCount: len(cr.Cell.ComputeNodes), instanceCount: len(cr.Cell.Instances)}
		if ci.computeCount > 0 {
			ci.computeNodes = &cr.Cell.ComputeNodes[0]
		}
		if ci.instanceCount > 0 {
			ci.instances = &cr.Cell.Instances[0]
		}
		ci.softDeleted = strings.Join(cr.Cell.SoftDeletedHosts, "\x00")
		var b strings.Builder
		for _, sv := range cr.Cell.Services {
			up := rules.NewNova(rules.Release{}, rules.PostgreSQL, c.cfg.Settings).ServiceIsUp(now, sv.LastSeenUp, sv.CreatedAt, sv.ForcedDown)
			fmt.Fprintf(&b, "%d\x00%s\x00%s\x00%t%t%t%t\x00%d\n", sv.ID, sv.Host, sv.Binary, sv.Disabled, sv.ForcedDown, sv.Deleted, up, sv.Version)
		}
		ci.services = b.String()
		in.cells = append(in.cells, ci)
	}
	return in
}

func (in inputs) equal(o inputs) bool { return slices.Equal(in.cells, o.cells) }

// sameNodes reports whether t's nodes are, as Nova's node list gives them,
// nodes: a power state or a lock changing in Ironic changes no answer.
func sameNodes(t *topology.Topology, nodes []*db.Node) bool {
	if t == nil || len(t.Nodes) != len(nodes) {
		return t == nil && nodes == nil
	}
	for i := range t.Nodes {
		if n := t.Nodes[i].Node; n != nodes[i] && ironicNode(n) != ironicNode(nodes[i]) {
			return false
		}
	}
	return true
}

// nodesOf are t's nodes: nodes itself when they are the same pointers
// (Ironic's nodes unchanged, as in a quiet fleet), so that no refresh
// allocates them again.
func nodesOf(t *topology.Topology, nodes []*db.Node) []*db.Node {
	if t == nil {
		return nil
	}
	if len(nodes) == len(t.Nodes) {
		i := 0
		for i < len(nodes) && t.Nodes[i].Node == nodes[i] {
			i++
		}
		if i == len(nodes) {
			return nodes
		}
	}
	out := make([]*db.Node, len(t.Nodes))
	for i := range t.Nodes {
		out[i] = t.Nodes[i].Node
	}
	return out
}

// Shared is the novadb.Shared of the current Ironic topology (ironic
// returns it, nil when there is none): the Nova rows then share the uuid
// strings of Ironic's nodes.
func Shared(ironic func() *topology.Topology) novadb.Shared {
	return func(uuid string) (string, *string, bool) {
		t := ironic()
		if t == nil {
			return "", nil, false
		}
		// Node falls back to names: only a node of that very uuid shares.
		if n, ok := t.Node(uuid); ok && n.UUID == uuid {
			return n.UUID, n.InstanceUUID, true
		}
		return "", nil, false
	}
}

// ironicNodes are Ironic's nodes as Nova's answer reads them, each made
// when asked: a slice of them beside what an answer builds was 9 MB at
// 100k nodes, at the peak of the memory row with Nova (peak RSS within
// twice the live heap, the README's Performance table).
type ironicNodes []*db.Node

// Len implements nova.NodeList.
func (n ironicNodes) Len() int { return len(n) }

// Node implements nova.NodeList.
func (n ironicNodes) Node(i int) nova.IronicNode { return ironicNode(n[i]) }

// ironicNode is what Nova's node list and the problems read of n.
func ironicNode(n *db.Node) nova.IronicNode {
	return nova.IronicNode{UUID: n.UUID, ConductorGroup: n.ConductorGroup, Shard: deref(n.Shard),
		InstanceUUID: deref(n.InstanceUUID), ParentNode: deref(n.ParentNode),
		ProvisionState: deref(n.ProvisionState), Maintenance: n.Maintenance}
}

// UUID is the uuid of the answer's node i, 0 <= i < Fleet.Len().
func (s *State) UUID(i int) string { return s.nodes[i].UUID }

// InUUIDOrder yields the indexes of the answer's nodes (as UUID and
// Fleet.Claims take them) in the order of their uuids.
func (s *State) InUUIDOrder() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, i := range s.byUUID {
			if !yield(int(i)) {
				return
			}
		}
	}
}

// NodeClaims are the claims on the node of uuid; ok is false when the
// answer does not cover it.
func (s *State) NodeClaims(uuid string) (claims []nova.FleetClaim, ok bool) {
	j, ok := slices.BinarySearchFunc(s.byUUID, uuid, func(i int32, u string) int { return strings.Compare(s.nodes[i].UUID, u) })
	if !ok {
		return nil, false
	}
	return slices.Collect(s.Fleet.Claims(int(s.byUUID[j]))), true
}

// TableReads count the reads of one table.
type TableReads struct{ Read, Reused int }

// CellState is one cell's answer.
type CellState struct {
	nova.CellAnswer
	// Err is why the last read of the cell failed: the answer is then
	// computed from the rows of ReadAt.
	Err error
	// ReadAt is when the rows were read; zero when never.
	ReadAt time.Time
	// Database is the cell's connection without its password, Credentials
	// where it comes from (novadb.CredentialsCellMappings or
	// CredentialsTemplate) and User the database user it logs in as.
	Database, Credentials, User string
}

// Cache holds the Nova answer.
type Cache struct {
	cfg   Config
	state atomic.Pointer[State]
}

// New returns a cache; Run fills it.
func New(cfg Config) *Cache {
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Idle == nil {
		cfg.Idle = func() bool { return true }
	}
	c := &Cache{cfg: cfg}
	c.state.Store(&State{Assumed: cfg.Computes == nil, ServicegroupDriver: cfg.Settings.ServicegroupDriver})
	return c
}

// Current is the latest answer (never nil).
func (c *Cache) Current() *State { return c.state.Load() }

// Run reads at every interval until ctx ends. The first read waits, an
// interval at most, for Ironic's first topology: an answer over no nodes
// would say nothing for an interval.
func (c *Cache) Run(ctx context.Context) {
	for wait := time.Now().Add(c.cfg.Interval); c.cfg.Ironic() == nil && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		c.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads Nova's databases once and stores the new answer.
func (c *Cache) Refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	prev := c.state.Load()
	next := &State{Cells: prev.Cells, ReadAt: prev.ReadAt, TableReads: prev.TableReads,
		Fleet: prev.Fleet, Assumed: c.cfg.Computes == nil, ServicegroupDriver: c.cfg.Settings.ServicegroupDriver, nodes: prev.nodes, byUUID: prev.byUUID}
	var hosts []string
	if c.cfg.Computes != nil {
		for _, fc := range c.cfg.Computes.Computes {
			hosts = append(hosts, fc.Host)
		}
	}
	snap, err := c.cfg.Reader.Read(ctx, hosts)
	if err != nil {
		next.Err = err
		if prev.Err == nil {
			c.cfg.Logger.Error("reading Nova's databases failed; the Nova answers are stale", "err", err)
		}
		c.state.Store(next)
		return
	}
	if prev.Err != nil {
		c.cfg.Logger.Info("reading Nova's databases works again")
	}
	next.ReadAt = snap.ReadAt
	next.TableReads = maps.Clone(prev.TableReads)
	if next.TableReads == nil {
		next.TableReads = map[string]TableReads{}
	}
	for _, cr := range snap.Cells {
		if cr.Err != nil {
			continue
		}
		for table, reread := range map[string]bool{"compute_nodes": cr.Reread.ComputeNodes, "instances": cr.Reread.Instances} {
			r := next.TableReads[table]
			if reread {
				r.Read++
			} else {
				r.Reused++
			}
			next.TableReads[table] = r
		}
	}
	now := c.cfg.Now()
	t := c.cfg.Ironic()
	next.inputs = c.inputsOf(snap, now)
	same := !prev.ReadAt.IsZero() && next.inputs.equal(prev.inputs) && sameNodes(t, prev.nodes)
	next.nodes = nodesOf(t, prev.nodes)
	nodes := ironicNodes(next.nodes) // what Nova reads of them
	next.Cells = c.answer(snap, prev, nodes, t, now, same)
	if same {
		c.state.Store(next) // the views, Fleet and byUUID are prev's
		return
	}
	fc := make([]nova.FleetCell, len(snap.Cells))
	for i, cr := range snap.Cells {
		fc[i] = nova.FleetCell{Cell: cr.Cell, Answer: next.Cells[i].CellAnswer}
	}
	next.Fleet = nova.NewFleet(fc, nodes)
	for i := range next.Cells {
		// The Fleet holds the claims; the views' maps of them would be
		// 50 B/node more of the live heap (State.nodes says which row).
		for j := range next.Cells[i].Views {
			next.Cells[i].Views[j].Nodes = nil
		}
	}
	next.byUUID = make([]int32, len(next.nodes))
	for i := range next.byUUID {
		next.byUUID[i] = int32(i)
	}
	slices.SortFunc(next.byUUID, func(a, b int32) int { return strings.Compare(next.nodes[a].UUID, next.nodes[b].UUID) })
	c.state.Store(next)
	if c.cfg.AnswerReplaced != nil {
		c.cfg.AnswerReplaced(c.cfg.Idle)
	}
}

// answer computes each cell's answer over nodes at now; with same (the
// inputs are prev's) the views are prev's, the computes judged again.
func (c *Cache) answer(snap *novadb.Snapshot, prev *State, nodes nova.NodeList, t *topology.Topology, now time.Time, same bool) []CellState {
	ironicBackend := rules.PostgreSQL
	if t != nil {
		ironicBackend = t.Rules.Backend()
	}
	wasErr, warned, connected := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range prev.Cells {
		wasErr[p.UUID] = p.Err != nil
		connected[p.UUID+"\x00"+p.Database+"\x00"+p.Credentials] = true
		for _, w := range p.Warnings {
			warned[p.UUID+"\x00"+w] = true
		}
	}
	out := make([]CellState, 0, len(snap.Cells))
	for i, cr := range snap.Cells {
		var computes []nova.Compute
		if c.cfg.Computes != nil {
			computes = c.cfg.Computes.For(cr.Cell)
		}
		in := nova.AnswerInput{Now: now, Backend: topology.BackendKind(cr.Backend), IronicBackend: ironicBackend,
			Settings: c.cfg.Settings, Cell: cr.Cell, Nodes: nodes, Computes: computes}
		var a nova.CellAnswer
		if same {
			a = nova.Judge(in)
			a.Views = prev.Cells[i].Views
		} else {
			a = nova.Answer(in)
		}
		a.Warnings = append(a.Warnings, cr.Warnings...)
		if !connected[cr.Cell.UUID+"\x00"+cr.Database+"\x00"+cr.Credentials] {
			level := slog.LevelInfo
			if cr.Credentials == novadb.CredentialsCellMappings {
				level = slog.LevelWarn // Nova's own, read-write user
			}
			c.cfg.Logger.Log(context.Background(), level, "reading a Nova cell", "cell", cr.Cell.Name, "database", cr.Database,
				"user", cr.User, "credentials", cr.Credentials)
		}
		switch {
		case cr.Err != nil && !wasErr[cr.Cell.UUID]:
			c.cfg.Logger.Error("reading a Nova cell failed; its answers are stale", "cell", cr.Cell.Name, "database", cr.Database, "err", cr.Err)
		case cr.Err == nil && wasErr[cr.Cell.UUID]:
			c.cfg.Logger.Info("reading a Nova cell works again", "cell", cr.Cell.Name)
		}
		for _, w := range a.Warnings {
			if !warned[cr.Cell.UUID+"\x00"+w] {
				c.cfg.Logger.Warn(w, "cell", cr.Cell.Name)
			}
		}
		out = append(out, CellState{CellAnswer: a, Err: cr.Err, ReadAt: cr.ReadAt,
			Database: cr.Database, Credentials: cr.Credentials, User: cr.User})
	}
	return out
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
