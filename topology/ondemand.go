package topology

import (
	"context"
	"sync"
	"time"
)

// OnDemand is the refresh policy of a cache that reads its source when a
// reader asks: Cache's, and the Nova answer's (novacache). A state younger
// than MinInterval is served as it is; an older one starts a refresh, which
// concurrent callers share. A state within MaxAge is served at once while
// the refresh it starts runs, however long (the cache in use is refreshed
// ahead of its readers); a refresh started on an older one (an idle
// sidecar) is waited for until the reader's deadline, or at most MaxWait
// when it has none: a slow database never holds a reader longer.
type OnDemand struct {
	MinInterval, MaxWait time.Duration
	Now                  func() time.Time

	mu       sync.Mutex
	inflight chan struct{} // closed when the running refresh ends
	ahead    bool          // the running refresh was started within MaxAge: nobody waits for it
}

// OnDemandState tells OnDemand of the state a cache holds: when the
// refresh that made it started (zero before any), and whether it has data
// to serve.
type OnDemandState func() (attempted time.Time, data bool)

// OnDemandRefresh reads the source and returns commit, which stores the
// new state (run with the policy's lock held, so that no reader starts a
// refresh between the two), and after (nil: none), run once the refresh
// is over.
type OnDemandRefresh func() (commit, after func())

// Get returns once the caller may serve the cache's state (see OnDemand).
func (o *OnDemand) Get(ctx context.Context, state OnDemandState, refresh OnDemandRefresh) {
	if o.fresh(state) {
		return
	}
	o.mu.Lock()
	if o.fresh(state) {
		o.mu.Unlock()
		return
	}
	done := o.start(state, refresh)
	ahead := o.ahead
	o.mu.Unlock()
	if ahead {
		return
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.MaxWait)
		defer cancel()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Start starts a refresh now unless one runs, and returns the channel
// closed when the running one ends.
func (o *OnDemand) Start(state OnDemandState, refresh OnDemandRefresh) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.start(state, refresh)
}

// start is Start with o.mu held.
func (o *OnDemand) start(state OnDemandState, refresh OnDemandRefresh) chan struct{} {
	if o.inflight != nil {
		return o.inflight
	}
	done := make(chan struct{})
	o.inflight = done
	attempted, data := state()
	o.ahead = data && o.Now().Sub(attempted) < o.MaxAge()
	go func() {
		commit, after := refresh()
		o.mu.Lock()
		commit()
		o.inflight = nil
		o.mu.Unlock()
		close(done)
		if after != nil {
			after()
		}
	}()
	return done
}

func (o *OnDemand) fresh(state OnDemandState) bool {
	attempted, _ := state()
	return !attempted.IsZero() && o.Now().Sub(attempted) < o.MinInterval
}

// Idle reports whether no refresh runs (a memory policy that collects
// after a refresh would otherwise count the running one's data as live).
func (o *OnDemand) Idle() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.inflight == nil
}

// RefreshGrace is how much older than MinInterval a state may be and still
// be served without waiting while the refresh it started runs: a lookup
// is not held over 50 ms by a running refresh (the performance contract).
// The first reader past MinInterval starts the refresh. It is also the
// second the API allows before marking an answer stale.
const RefreshGrace = time.Second

// MaxAge is the oldest state Get returns without waiting for a refresh:
// MinInterval plus RefreshGrace, or twice MinInterval when that is shorter
// (MinInterval 0: every Get waits for its refresh).
func (o *OnDemand) MaxAge() time.Duration {
	return o.MinInterval + min(o.MinInterval, RefreshGrace)
}
