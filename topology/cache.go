package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
)

// Source yields database snapshots. *db.DB is the production Source.
type Source interface {
	Snapshot(ctx context.Context) (*db.Snapshot, error)
}

// CacheConfig configures a Cache. Zero values take the documented defaults.
type CacheConfig struct {
	// Source is where snapshots come from. Required.
	Source Source
	// Settings are the Ironic options the topology is computed with.
	Settings Settings
	// MinInterval is how old the cached topology may be before a request
	// triggers a refresh. Zero refreshes on every request.
	MinInterval time.Duration
	// RefreshTimeout bounds one refresh, whoever waits for it. Default 30s.
	RefreshTimeout time.Duration
	// Now is the clock; default time.Now. Liveness is judged in UTC.
	Now func() time.Time
	// Logger receives refresh failures and recoveries; default discards.
	Logger *slog.Logger
	// OnRefresh, when set, is told the outcome of every refresh as it ends
	// (the collector turns it into the refresh histogram and error counter).
	// It runs on the refreshing goroutine and must not block.
	OnRefresh func(Refresh)
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
}

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

// ErrNoData is returned while no refresh has ever succeeded.
var ErrNoData = errors.New("no topology read from the database yet")

// Cache holds the current topology and refreshes it from the Source at most
// once per MinInterval. Concurrent callers share a single refresh, which is
// bounded by RefreshTimeout and not cancelled when one caller gives up.
type Cache struct {
	cfg CacheConfig

	// state is read without locking on the hot path; it is replaced, under
	// mu, when a refresh ends.
	state    atomic.Pointer[cacheState]
	mu       sync.Mutex
	inflight chan struct{} // closed when the running refresh ends
}

// cacheState is the outcome of the latest finished refresh.
type cacheState struct {
	view      View
	attempted time.Time // when that refresh started; zero before any
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg}
	c.state.Store(&cacheState{view: View{Err: ErrNoData, Remapped: map[string]float64{}}})
	return c, nil
}

// Get returns a view no older than MinInterval, refreshing first when the
// cached one is older. If ctx ends before the refresh does, the current view
// is returned: a slow database never blanks a scrape.
func (c *Cache) Get(ctx context.Context) View {
	if s := c.state.Load(); c.fresh(s) {
		return s.view
	}
	c.mu.Lock()
	if s := c.state.Load(); c.fresh(s) {
		c.mu.Unlock()
		return s.view
	}
	done := c.inflight
	if done == nil {
		done = make(chan struct{})
		c.inflight = done
		go c.refresh(done)
	}
	c.mu.Unlock()

	select {
	case <-done:
	case <-ctx.Done():
	}
	return c.Current()
}

// Now returns the cache's clock reading.
func (c *Cache) Now() time.Time { return c.cfg.Now() }

// Current returns the cached view without refreshing.
func (c *Cache) Current() View { return c.state.Load().view }

func (c *Cache) fresh(s *cacheState) bool {
	return !s.attempted.IsZero() && c.cfg.Now().Sub(s.attempted) < c.cfg.MinInterval
}

func (c *Cache) refresh(done chan struct{}) {
	start := c.cfg.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RefreshTimeout)
	defer cancel()

	old := c.state.Load().view // only refresh replaces the state
	topo, err := c.build(ctx, old.Topology, start)
	if c.cfg.OnRefresh != nil {
		c.cfg.OnRefresh(Refresh{Started: start, Duration: time.Since(start), Err: err})
	}

	next := &cacheState{view: old, attempted: start}
	if err != nil {
		next.view.Err = err
		c.cfg.Logger.Error("refresh failed; serving the last good topology", "err", err,
			"last_success", old.LastSuccess)
	} else {
		remapped := maps.Clone(old.Remapped)
		for g, n := range topo.Remapped {
			remapped[g] += float64(n)
		}
		if !old.Up() && old.Err != ErrNoData {
			c.cfg.Logger.Info("refresh recovered", "down_since_success", old.LastSuccess)
		}
		next.view = View{Topology: topo, LastSuccess: start, Remapped: remapped}
		c.logRules(old.Topology, topo)
	}
	c.mu.Lock()
	c.state.Store(next)
	c.inflight = nil
	c.mu.Unlock()
	close(done)
}

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

func (c *Cache) build(ctx context.Context, prev *Topology, now time.Time) (*Topology, error) {
	snap, err := c.cfg.Source.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	return Build(snap, c.cfg.Settings, now.UTC(), prev)
}
