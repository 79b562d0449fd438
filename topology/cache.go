package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// Source yields database snapshots; *db.DB is the production one. known
// (nil: none) is what the cache holds: the source may then leave the nodes
// out when their probe is unchanged (db.NodeReadSkipped), or read only
// those that changed and merge them into known's (db.DB.SnapshotChanges);
// a source may also ignore it and read every node.
type Source interface {
	SnapshotChanges(ctx context.Context, known *db.Known) (*db.Snapshot, error)
}

// DefaultProbeWindow is CacheConfig.ProbeWindow's default: a whole second
// of MySQL's DATETIME, and as much again for clock differences between
// Ironic's hosts.
const DefaultProbeWindow = 2 * time.Second

// CacheConfig configures a Cache. Zero values take the documented defaults.
type CacheConfig struct {
	// Source is where snapshots come from. Required.
	Source Source
	// Settings are the Ironic options the topology is computed with.
	Settings Settings
	// MinInterval is how old the cached topology may be before a request
	// triggers a refresh; the request waits for it only when the topology
	// is older than Cache.MaxAge. Zero refreshes, and waits, on every
	// request.
	MinInterval time.Duration
	// RefreshTimeout bounds one refresh, whoever waits for it. Default 30s.
	RefreshTimeout time.Duration
	// FullInterval, when positive, lets a refresh skip reading the nodes
	// while their probe is unchanged, and read only the nodes that may have
	// changed when it changed, for at most this long since every node was
	// last read (the safety net). Zero reads them all at every refresh.
	// Conductors are read, and liveness judged, every time.
	FullInterval time.Duration
	// ProbeWindow covers a coarse clock's tick (a write within it leaves
	// the same timestamp) and the clock skew between Ironic's hosts and the
	// exporter: a probe taken less than this after its db.NodeProbe.Latest
	// does not spare the next node read (db.Known.Recent: the changes are
	// read as a delta), and a delta read reads again the rows written up to
	// this long before Latest. Default DefaultProbeWindow.
	ProbeWindow time.Duration
	// MaxWait bounds how long Get waits for a refresh when its context has
	// no deadline (JSON, the status page, a scrape without Prometheus'
	// timeout header); then the reader gets the last topology, its staleness
	// visible in View.Err and View.LastSuccess. Default DefaultMaxWait.
	MaxWait time.Duration
	// Now is the clock; default time.Now. Liveness is judged in UTC.
	Now func() time.Time
	// Logger receives refresh failures and recoveries; default discards.
	Logger *slog.Logger
	// OnRefresh, when set, is told the outcome of every refresh as it ends
	// (the collector turns it into the refresh histogram and error counter).
	// It runs on the refreshing goroutine and must not block.
	OnRefresh func(Refresh)
	// HistoryWindow, when positive and Source is a HistorySource, keeps
	// node_history's events of this last window (Topology.History), read
	// after each snapshot from where the last read ended. Zero reads none.
	HistoryWindow time.Duration
	// NodesReplaced, when set, runs on the refreshing goroutine after a
	// refresh whose read replaced the cached nodes, once the cache no longer
	// holds what it replaced (the binary's memory policy, internal/memlimit,
	// collects it then); idle reports whether no refresh runs.
	NodesReplaced func(idle func() bool)
}

// Refresh is the outcome of one refresh, as reported to
// CacheConfig.OnRefresh.
type Refresh struct {
	// Started is when the refresh began.
	Started time.Time
	// Duration is how long it took.
	Duration time.Duration
	// Err is why it failed, nil when it succeeded.
	Err error
	// Topology is what it built, nil when it failed. Renderers that keep a
	// history (the status page's conductor states) record from it.
	Topology *Topology
	// NodeRead is how the snapshot read the nodes (db.NodeReadFull,
	// NodeReadDelta, NodeReadSkipped); "" when no snapshot was read.
	NodeRead db.NodeRead
	// SnapshotWarnings and SnapshotWarningCounts are the snapshot's row
	// warnings (db.Snapshot.Warnings, WarningCounts), nil when it had
	// none or none was read.
	SnapshotWarnings      []string
	SnapshotWarningCounts []db.WarningCount
}

// Snapshot tells whether a snapshot was read, even if building its
// topology failed.
func (r Refresh) Snapshot() bool { return r.NodeRead != "" }

// View is what a reader gets from the cache: the newest good topology and
// the outcome of the latest refresh.
type View struct {
	// Topology is the last successfully built topology, nil before the
	// first success.
	Topology *Topology
	// Err is the error of the latest refresh, nil when it succeeded.
	Err error
	// LastSuccess is when Topology was read; zero before the first success.
	LastSuccess time.Time
	// Remapped is the cumulative count of nodes remapped per conductor
	// group since the process started.
	Remapped map[string]float64
}

// Up reports whether the latest refresh succeeded.
func (v View) Up() bool { return v.Err == nil && v.Topology != nil }

// DefaultMaxWait is CacheConfig.MaxWait's default: long enough for a
// healthy refresh of a large fleet to finish, short enough that a silent
// database is never felt by readers.
const DefaultMaxWait = 500 * time.Millisecond

// Permanent reports whether the latest refresh failed for a reason retrying
// will not fix: the database is not Ironic's (db.ErrNotIronic, a table or
// column it reads is missing), unlike a transient failure (the server
// unreachable, a timeout, a lock).
func (v View) Permanent() bool { return errors.Is(v.Err, db.ErrNotIronic) }

// ErrKind is the kind of the latest refresh's error (dbconn.ErrorKind: timeout,
// connection, auth, schema, query or other), "" when it succeeded.
func (v View) ErrKind() string { return dbconn.ErrorKind(v.Err) }

// ErrNoData is returned while no refresh has ever succeeded.
var ErrNoData = errors.New("no topology read from the database yet")

// Cache holds the current topology and refreshes it from the Source at most
// once per MinInterval, with the OnDemand policy. Concurrent callers share a
// single refresh, which is bounded by RefreshTimeout and not cancelled when
// one caller gives up.
type Cache struct {
	cfg    CacheConfig
	policy OnDemand

	// state is read without locking on the hot path; it is replaced, under
	// the policy's lock, when a refresh ends.
	state atomic.Pointer[cacheState]
}

// cacheState is the outcome of the latest finished refresh.
type cacheState struct {
	view      View
	attempted time.Time // when that refresh started; zero before any
	// nodes are what the served topology's nodes came from, with their
	// probe, when the refresh that read them took it; what a refresh
	// whose probe is unchanged reuses.
	nodes    []*db.Node
	probe    *db.NodeProbe
	probedAt time.Time
	readAt   time.Time // when the nodes were last read
	// history is the node_history window (nil: none read, or no table).
	history *History
}

// NewCache returns a Cache; it reads nothing until the first Get.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if cfg.Source == nil {
		return nil, errors.New("topology: CacheConfig.Source is nil")
	}
	if cfg.RefreshTimeout <= 0 {
		cfg.RefreshTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProbeWindow <= 0 {
		cfg.ProbeWindow = DefaultProbeWindow
	}
	c := &Cache{cfg: cfg, policy: OnDemand{MinInterval: cfg.MinInterval, MaxWait: cfg.MaxWait, Now: cfg.Now}}
	c.state.Store(&cacheState{view: View{Err: ErrNoData, Remapped: map[string]float64{}}})
	return c, nil
}

// Get returns the cached view, refreshing it when it is older than
// MinInterval, with the OnDemand policy: a view within MaxAge is returned
// at once while the refresh it starts runs, however long (a full read of
// 1M nodes takes seconds), and the API marks an answer older than
// MinInterval plus a second stale; a refresh started on an older view (an
// idle sidecar) is waited for until ctx's deadline (a scrape's budget), or
// at most MaxWait when ctx has none: a slow database never blanks a scrape
// nor holds a reader.
func (c *Cache) Get(ctx context.Context) View {
	c.policy.Get(ctx, c.policyState, c.refresh)
	return c.Current()
}

// policyState is the OnDemand State of the cache.
func (c *Cache) policyState() (time.Time, bool) {
	s := c.state.Load()
	return s.attempted, s.view.Topology != nil
}

// Now returns the cache's clock reading.
func (c *Cache) Now() time.Time { return c.cfg.Now() }

// Current returns the cached view without refreshing.
func (c *Cache) Current() View { return c.state.Load().view }

// refresh runs one refresh (an OnDemand Refresh).
func (c *Cache) refresh() (commit, after func()) {
	start := c.cfg.Now()
	begin := time.Now() // the duration is real time, whatever clock Now is
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RefreshTimeout)
	defer cancel()

	prev := c.state.Load() // only refresh replaces the state
	old := prev.view
	next := &cacheState{view: old, attempted: start, nodes: prev.nodes, probe: prev.probe,
		probedAt: prev.probedAt, readAt: prev.readAt, history: prev.history}
	topo, snap, err := c.build(ctx, prev, next, start)
	if err == nil {
		topo.History, next.history = c.readHistory(ctx, prev.history, start)
	}
	took := time.Since(begin)
	if c.cfg.OnRefresh != nil {
		r := Refresh{Started: start, Duration: took, Err: err, Topology: topo}
		if snap != nil {
			r.SnapshotWarnings, r.SnapshotWarningCounts = snap.Warnings, snap.WarningCounts
			r.NodeRead = nodeRead(snap)
		}
		c.cfg.OnRefresh(r)
	}

	if err != nil {
		next.view.Err = err
		kind := "transient"
		if errors.Is(err, db.ErrNotIronic) {
			kind = "permanent" // retrying cannot fix it; the operator must
		}
		if old.Topology == nil {
			c.cfg.Logger.Error("refresh failed; no topology has been read yet", "problem", kind, "err", err,
				"took", took.Round(time.Millisecond))
		} else {
			c.cfg.Logger.Error("refresh failed; serving the last good topology", "problem", kind, "err", err,
				"took", took.Round(time.Millisecond), "last_success", old.LastSuccess)
		}
	} else {
		remapped := maps.Clone(old.Remapped)
		for g, n := range topo.Remapped {
			remapped[g] += float64(n)
		}
		switch {
		case old.Up() || errors.Is(old.Err, ErrNoData):
		case old.Topology == nil:
			c.cfg.Logger.Info("refresh recovered: first topology read after failed attempts")
		default:
			c.cfg.Logger.Info("refresh recovered", "down_since_success", old.LastSuccess)
		}
		next.view = View{Topology: topo, LastSuccess: start, Remapped: remapped}
		c.logRules(old.Topology, topo)
	}
	commit = func() { c.state.Store(next) }
	if c.cfg.NodesReplaced != nil && err == nil && nodeRead(snap) != db.NodeReadSkipped && !sameSlice(next.nodes, prev.nodes) {
		after = func() { c.cfg.NodesReplaced(c.Idle) }
	}
	return commit, after
}

// Idle reports whether no refresh runs (OnDemand.Idle).
func (c *Cache) Idle() bool { return c.policy.Idle() }

// logRules logs the Ironic release the topology was judged by, what told
// it, the settings and every caveat, when any of them changed since prev.
func (c *Cache) logRules(prev, t *Topology) {
	d, r := t.Detection, t.Rules
	if prev != nil && prev.Rules == r && prev.Detection.From == d.From &&
		prev.Detection.SchemaRevision == d.SchemaRevision &&
		slices.Equal(prev.Detection.ConductorVersions, d.ConductorVersions) {
		return
	}
	s := r.Settings()
	c.cfg.Logger.Info("Ironic rules", "release", d.Release, "detected_from", d.From,
		"schema_revision", d.SchemaRevision, "conductor_versions", strings.Join(d.ConductorVersions, ","),
		"range", d.Min.String()+"-"+d.Max.String(), "backend", r.Backend(), "ironic_uses_sqlite", r.IronicUsesSQLite(),
		"heartbeat_timeout", s.HeartbeatTimeout, "hash_partition_exponent", s.PartitionExponent,
		"hash_ring_algorithm", r.EffectiveAlgorithm(), "heartbeats", r.Heartbeats(), "ungrouped_rings", r.UngroupedRings())
	for _, w := range append(slices.Clone(d.Warnings), r.Exact()...) {
		c.cfg.Logger.Warn("answers may not be Ironic's", "reason", w)
	}
}

// build reads a snapshot and builds its topology over prev's. It passes
// the Source prev's nodes and probe when they may be reused (see
// CacheConfig.FullInterval and ProbeWindow); next receives the nodes and
// probe of a successful build. The snapshot read is returned even when
// building its topology failed.
func (c *Cache) build(ctx context.Context, prev, next *cacheState, now time.Time) (*Topology, *db.Snapshot, error) {
	var known *db.Known
	if c.cfg.FullInterval > 0 && prev.probe != nil && prev.view.Topology != nil && now.Sub(prev.readAt) < c.cfg.FullInterval {
		known = &db.Known{Probe: *prev.probe, Nodes: prev.nodes, Window: c.cfg.ProbeWindow,
			Recent: prev.probedAt.Sub(prev.probe.Latest()) < c.cfg.ProbeWindow}
	}
	snap, err := c.cfg.Source.SnapshotChanges(ctx, known)
	if err != nil {
		return nil, nil, fmt.Errorf("reading snapshot: %w", err)
	}
	if snap.NodeRead == db.NodeReadSkipped {
		unchanged := *snap // the Source's snapshot is its own
		unchanged.Nodes = prev.nodes
		snap = &unchanged
	}
	topo, err := Build(snap, c.cfg.Settings, now.UTC(), prev.view.Topology)
	if err != nil {
		return nil, snap, err
	}
	probe := snap.NodeProbe
	next.nodes, next.probe, next.probedAt = snap.Nodes, &probe, now.UTC()
	if nodeRead(snap) == db.NodeReadFull {
		next.readAt = now
	}
	return topo, snap, nil
}

// readHistory returns the node_history window after a good snapshot (see
// CacheConfig.HistoryWindow), and what the next read continues from. A
// failed read keeps the last window, saying so in its Warning: the
// snapshot stands, and the page tells that the history is not current.
func (c *Cache) readHistory(ctx context.Context, prev *History, now time.Time) (shown, kept *History) {
	src, ok := c.cfg.Source.(HistorySource)
	if !ok || c.cfg.HistoryWindow <= 0 {
		return nil, nil
	}
	h, err := nextHistory(ctx, src, prev, c.cfg.HistoryWindow, now.UTC())
	if err == nil {
		return h, h
	}
	c.cfg.Logger.Warn("reading node_history failed; the history shown is the last read", "err", err)
	if h == nil {
		return nil, nil
	}
	stale := *h
	stale.Warning = "reading node_history failed: " + err.Error()
	return &stale, h
}

// nodeRead is how snap read its nodes; a Source that does not say read
// them all.
func nodeRead(snap *db.Snapshot) db.NodeRead {
	if snap.NodeRead == "" {
		return db.NodeReadFull
	}
	return snap.NodeRead
}

// MinInterval is the age the cache lets its topology reach before a
// request refreshes it (CacheConfig.MinInterval).
func (c *Cache) MinInterval() time.Duration { return c.cfg.MinInterval }

// MaxAge is the oldest view Get returns without waiting for a refresh
// (OnDemand.MaxAge).
func (c *Cache) MaxAge() time.Duration { return c.policy.MaxAge() }
