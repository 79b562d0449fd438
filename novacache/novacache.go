// Package novacache keeps the Nova side of the answer: it reads Nova's
// databases (package novadb) when asked and the answer is older than an
// interval, joins each cell's rows with Ironic's nodes of the current
// topology, and computes with package nova every compute's view. Its
// refresh policy is topology.Cache's: callers share one refresh, bounded
// by a timeout; a reader waits for it only when the answer is older than
// Cache.MaxAge, and then at most until its deadline. A Nova outage leaves
// the last answer in place, marked stale (State.Err, CellState.Err); the
// Ironic answers do not depend on it.
package novacache

import (
	"context"
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
// known is the last read the cache holds (nil: none): the reader may
// reuse its rows where their probes are unchanged (novadb.Known).
type Reader interface {
	Read(ctx context.Context, hosts []string, known *novadb.Known) (*novadb.Snapshot, error)
}

// Config configures a Cache.
type Config struct {
	Reader Reader
	// Ironic is Ironic's topology as its cache gives it within ctx
	// (topology.Cache.Get): the answer is computed over its nodes, none
	// while it has none.
	Ironic func(ctx context.Context) *topology.Topology
	// Settings are Nova's [DEFAULT] service_down_time and report_interval.
	Settings rules.NovaSettings
	// Computes is the computes file; nil: every ironic compute, with no
	// [ironic] option set (nova.DefaultComputes).
	Computes *nova.ComputesFile
	// Interval is how old the answer may be before a Get reads Nova's
	// databases again (topology.CacheConfig.MinInterval's role); default
	// 15s (Nova's services write their heartbeat every report_interval,
	// 10s by default).
	Interval time.Duration
	// Timeout bounds one refresh, whoever waits for it; default 30s.
	Timeout time.Duration
	// ProbeWindow is novadb.Known.Window; default
	// topology.DefaultProbeWindow, as for Ironic's nodes.
	ProbeWindow time.Duration
	// MaxWait bounds how long Get waits for a refresh when its context has
	// no deadline; default topology.DefaultMaxWait.
	MaxWait time.Duration
	// OnRefresh, when set, is told the outcome of every refresh as it ends
	// (the collector turns it into the refresh histogram, error counter and
	// error kind). It runs on the refreshing goroutine and must not block.
	OnRefresh func(Refresh)
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
	// Pointers and indexes, not copies of what Nova reads of each node
	// (the memory row with Nova, docs/performance.md).
	nodes  []*db.Node
	byUUID []int32
	// inputs are what the views and Fleet were computed from.
	inputs inputs
	// attempted is when the refresh that made this state started; zero
	// before any.
	attempted time.Time
	// read is the last read that reached nova_api, handed back to the
	// reader (novadb.Known) as topology.Cache hands db its nodes.
	read *novadb.Snapshot
}

// Refresh is the outcome of one refresh, as reported to Config.OnRefresh.
type Refresh struct {
	// Started is when the refresh began; Duration how long it took.
	Started  time.Time
	Duration time.Duration
	// Err is why a read failed: nova_api's error, else the first failing
	// cell's (in cell_mappings' order); nil when every read worked.
	Err error
}

// inputs are what a refresh's views and Fleet depend on besides Ironic's
// nodes (compared field by field, sameNodes), compared to spare computing
// them again: per cell the generations of its compute nodes and instances
// (novadb.CellRead.Generation) and its services as judged now (every field
// the answer reads but the heartbeat's time). Computing them takes a
// fraction of a second at 100k nodes (BenchmarkNova), most of the
// steady-state CPU row (docs/performance.md).
type inputs struct {
	cells []cellInputs
}

type cellInputs struct {
	uuid        string
	generation  novadb.Generation
	services    []serviceInput
	softDeleted []string // SoftDeletedHosts
}

// serviceInput is what the answer reads of a services row, its liveness
// judged now in place of its heartbeat's time.
type serviceInput struct {
	id                                int64
	host, binary                      string
	disabled, forcedDown, deleted, up bool
	version                           int
}

// inputsOf are the inputs of an answer over snap's cells at now.
func (c *Cache) inputsOf(snap *novadb.Snapshot, now time.Time) inputs {
	var in inputs
	for _, cr := range snap.Cells {
		ci := cellInputs{uuid: cr.Cell.UUID, generation: cr.Generation}
		ci.softDeleted = cr.Cell.SoftDeletedHosts
		for _, sv := range cr.Cell.Services {
			up := rules.NewNova(rules.Release{}, rules.PostgreSQL, c.cfg.Settings).ServiceIsUp(now, sv.LastSeenUp, sv.CreatedAt, sv.ForcedDown)
			ci.services = append(ci.services, serviceInput{id: sv.ID, host: sv.Host, binary: sv.Binary, disabled: sv.Disabled,
				forcedDown: sv.ForcedDown, deleted: sv.Deleted, up: up, version: sv.Version})
		}
		in.cells = append(in.cells, ci)
	}
	return in
}

func (in inputs) equal(o inputs) bool {
	return slices.EqualFunc(in.cells, o.cells, func(a, b cellInputs) bool {
		return a.uuid == b.uuid && a.generation == b.generation && slices.Equal(a.services, b.services) && slices.Equal(a.softDeleted, b.softDeleted)
	})
}

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

// ironicNode is what Nova's node list and the problems read of n.
func ironicNode(n *db.Node) nova.IronicNode {
	return nova.IronicNode{UUID: n.UUID, ConductorGroup: n.ConductorGroup, Shard: db.Text(n.Shard),
		InstanceUUID: db.Text(n.InstanceUUID), ParentNode: db.Text(n.ParentNode),
		ProvisionState: db.Text(n.ProvisionState), Maintenance: n.Maintenance}
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

// NodeComputes are the claims on the node of uuid in the answer Get gives
// with no deadline (api.NovaLookup); ok is false when the answer does not
// cover it.
func (c *Cache) NodeComputes(uuid string) ([]nova.FleetClaim, bool) {
	return c.Get(context.Background()).NodeClaims(uuid)
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

// Cache holds the Nova answer and refreshes it when asked, at most once per
// Interval, with topology.Cache's policy (topology.OnDemand): concurrent
// callers share a single refresh, bounded by Timeout and not cancelled when
// one caller gives up.
type Cache struct {
	cfg    Config
	policy topology.OnDemand
	state  atomic.Pointer[State]
}

// New returns a cache; it reads nothing until the first Get.
func New(cfg Config) *Cache {
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = topology.DefaultMaxWait
	}
	if cfg.ProbeWindow <= 0 {
		cfg.ProbeWindow = topology.DefaultProbeWindow
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
	if cfg.Ironic == nil {
		cfg.Ironic = func(context.Context) *topology.Topology { return nil }
	}
	c := &Cache{cfg: cfg, policy: topology.OnDemand{MinInterval: cfg.Interval, MaxWait: cfg.MaxWait, Now: cfg.Now}}
	c.state.Store(&State{Assumed: cfg.Computes == nil, ServicegroupDriver: cfg.Settings.ServicegroupDriver})
	return c
}

// Current is the latest answer (never nil), without refreshing it.
func (c *Cache) Current() *State { return c.state.Load() }

// Get returns the answer, refreshing it when it is older than Interval, as
// topology.Cache.Get does its view (topology.OnDemand): an answer within
// MaxAge is returned at once while the refresh it starts runs; a refresh
// started on an older one is waited for until ctx's deadline, or at most
// MaxWait when ctx has none, and then the current answer is returned.
func (c *Cache) Get(ctx context.Context) *State {
	c.policy.Get(ctx, c.policyState, c.refresh)
	return c.Current()
}

// Refresh refreshes the answer now, or joins the refresh that runs, and
// waits for it until ctx ends.
func (c *Cache) Refresh(ctx context.Context) {
	select {
	case <-c.policy.Start(c.policyState, c.refresh):
	case <-ctx.Done():
	}
}

// MaxAge is the oldest answer Get returns without waiting for a refresh
// (topology.OnDemand.MaxAge).
func (c *Cache) MaxAge() time.Duration { return c.policy.MaxAge() }

// policyState is the topology.OnDemandState of the cache.
func (c *Cache) policyState() (time.Time, bool) {
	s := c.state.Load()
	return s.attempted, s.Fleet != nil
}

// refresh runs one refresh (a topology.OnDemandRefresh) and reports it.
func (c *Cache) refresh() (commit, after func()) {
	start := c.cfg.Now()
	begin := time.Now() // the duration is real time, whatever clock Now is
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	next, replaced, err := c.read(ctx, start)
	if c.cfg.OnRefresh != nil {
		c.cfg.OnRefresh(Refresh{Started: start, Duration: time.Since(begin), Err: err})
	}
	if replaced && c.cfg.AnswerReplaced != nil {
		after = func() { c.cfg.AnswerReplaced(c.cfg.Idle) }
	}
	return func() { c.state.Store(next) }, after
}

// read reads Nova's databases once, started at start, and returns the new
// answer, whether it computed new views and Fleet (replaced) and
// Refresh.Err.
func (c *Cache) read(ctx context.Context, start time.Time) (next *State, replaced bool, err error) {
	prev := c.state.Load()
	next = &State{Cells: prev.Cells, ReadAt: prev.ReadAt, TableReads: prev.TableReads,
		Fleet: prev.Fleet, Assumed: c.cfg.Computes == nil, ServicegroupDriver: c.cfg.Settings.ServicegroupDriver, nodes: prev.nodes, byUUID: prev.byUUID,
		attempted: start, read: prev.read}
	var hosts []string
	if c.cfg.Computes != nil {
		for _, fc := range c.cfg.Computes.Computes {
			hosts = append(hosts, fc.Host)
		}
	}
	var known *novadb.Known
	if prev.read != nil {
		known = &novadb.Known{Last: prev.read, Window: c.cfg.ProbeWindow}
	}
	snap, err := c.cfg.Reader.Read(ctx, hosts, known)
	if err != nil {
		next.Err = err
		if prev.Err == nil {
			c.cfg.Logger.Error("reading Nova's databases failed; the Nova answers are stale", "err", err)
		}
		return next, false, err
	}
	if prev.Err != nil {
		c.cfg.Logger.Info("reading Nova's databases works again")
	}
	next.ReadAt, next.read = snap.ReadAt, snap
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
	t := c.cfg.Ironic(ctx)
	next.inputs = c.inputsOf(snap, now)
	same := !prev.ReadAt.IsZero() && next.inputs.equal(prev.inputs) && sameNodes(t, prev.nodes)
	next.nodes = nodesOf(t, prev.nodes)
	var nodes nova.Nodes // what Nova reads of them; Judge (same) reads none
	if !same {
		nodes = make(nova.Nodes, len(next.nodes))
		for i, n := range next.nodes {
			nodes[i] = ironicNode(n)
		}
	}
	next.Cells = c.answer(snap, prev, nodes, t, now, same)
	if same {
		return next, false, cellsErr(snap) // the views, Fleet and byUUID are prev's
	}
	fc := make([]nova.FleetCell, len(snap.Cells))
	for i, cr := range snap.Cells {
		fc[i] = nova.FleetCell{Cell: cr.Cell, Answer: next.Cells[i].CellAnswer}
	}
	next.Fleet = nova.NewFleet(fc, nodes)
	next.byUUID = make([]int32, len(next.nodes))
	for i := range next.byUUID {
		next.byUUID[i] = int32(i)
	}
	slices.SortFunc(next.byUUID, func(a, b int32) int { return strings.Compare(next.nodes[a].UUID, next.nodes[b].UUID) })
	return next, true, cellsErr(snap)
}

// cellsErr is the first failing cell's error of snap, nil when none
// failed.
func cellsErr(snap *novadb.Snapshot) error {
	for _, cr := range snap.Cells {
		if cr.Err != nil {
			return cr.Err
		}
	}
	return nil
}

// answer computes each cell's answer over nodes at now; with same (the
// inputs are prev's) the views are prev's, the computes judged again.
func (c *Cache) answer(snap *novadb.Snapshot, prev *State, nodes nova.Nodes, t *topology.Topology, now time.Time, same bool) []CellState {
	ironicBackend := rules.PostgreSQL
	if t != nil {
		ironicBackend = t.Rules.Backend()
	}
	type connection struct{ cell, database, credentials string }
	type warning struct{ cell, text string }
	wasErr, warned, connected := map[string]bool{}, map[warning]bool{}, map[connection]bool{}
	for _, p := range prev.Cells {
		wasErr[p.UUID] = p.Err != nil
		connected[connection{p.UUID, p.Database, p.Credentials}] = true
		for _, w := range p.Warnings {
			warned[warning{p.UUID, w}] = true
		}
	}
	out := make([]CellState, 0, len(snap.Cells))
	for i, cr := range snap.Cells {
		var computes []nova.Compute
		if c.cfg.Computes != nil {
			computes = c.cfg.Computes.For(cr.Cell)
		}
		in := nova.AnswerInput{Now: now, Backend: cr.Backend, IronicBackend: ironicBackend,
			Settings: c.cfg.Settings, Cell: cr.Cell, Nodes: nodes, Computes: computes}
		var a nova.CellAnswer
		if same {
			a = nova.Judge(in)
			a.Views = prev.Cells[i].Views
		} else {
			a = nova.Answer(in)
		}
		a.Warnings = append(a.Warnings, cr.Warnings...)
		a.RowWarnings = append(slices.Clip(a.RowWarnings), cr.RowWarnings...)
		if !connected[connection{cr.Cell.UUID, cr.Database, cr.Credentials}] {
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
			if !warned[warning{cr.Cell.UUID, w}] {
				c.cfg.Logger.Warn(w, "cell", cr.Cell.Name)
			}
		}
		out = append(out, CellState{CellAnswer: a, Err: cr.Err, ReadAt: cr.ReadAt,
			Database: cr.Database, Credentials: cr.Credentials, User: cr.User})
	}
	return out
}
