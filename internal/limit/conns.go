package limit

import (
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// Conns is a listener that holds at most n connections open at once, as
// netutil.LimitListener does, but that makes room for a new connection by
// closing the one that has been idle longest: a connection that has not
// finished a request's headers yet (a TLS handshake, a slowloris dribbling
// its headers, a connection that sends nothing) or a keep-alive
// connection between requests. A flood of idle connections then takes no
// file descriptor beyond n+1 and never shuts a prober or a scraper out.
// Only a connection whose server waits in Read for its bytes is idle: one
// accepted but not read yet, or reading what came (a prober's whole
// request sent at once), or waiting for a CPU token, is never closed (a
// burst of accepts would otherwise close a fresh request before its
// goroutine ran), nor one whose socket holds bytes not read yet (its
// request came while its server waited). When no connection is idle, Accept waits for one to
// be, or to end (the kernel's backlog holds the rest), as LimitListener
// does.
//
// The states come from the server's ConnState hook: Track sets it.
type Conns struct {
	net.Listener
	n int

	mu    sync.Mutex
	freed *sync.Cond
	open  map[*trackedConn]struct{}
	// Evicted counts the idle connections closed to make room.
	evicted int
}

// NewConns caps l at n connections (n > 0).
func NewConns(l net.Listener, n int) *Conns {
	c := &Conns{Listener: l, n: max(1, n), open: map[*trackedConn]struct{}{}}
	c.freed = sync.NewCond(&c.mu)
	return c
}

// Track sets srv's ConnState hook to tell the Conns listeners it serves
// which of their connections are idle (keeping a hook srv had), and its
// ConnContext and handler so that the connections of CPU listeners give
// their token back while a handler runs. Call it after setting srv.Handler.
func Track(srv *http.Server) {
	srv.ConnContext = cpuContext(srv.ConnContext)
	srv.Handler = freeCPU(srv.Handler)
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if t := under[*trackedConn](c); t != nil {
			t.setState(s)
		}
		if prev != nil {
			prev(c, s)
		}
	}
}

// Evicted is how many idle connections were closed to make room.
func (c *Conns) Evicted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evicted
}

// Accept accepts a connection, then, when n are open, closes the one idle
// longest, or waits for one to close when none is idle.
func (c *Conns) Accept() (net.Conn, error) {
	raw, err := c.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: raw, owner: c, idleSince: time.Now()}
	c.mu.Lock()
	var skip map[*trackedConn]bool // idle, but with bytes come meanwhile
	for len(c.open) >= c.n {
		if v := c.oldestIdle(skip); v != nil {
			if pending(v.Conn) { // its request came while its server waited: not idle
				if skip == nil {
					skip = map[*trackedConn]bool{}
				}
				skip[v] = true
				continue
			}
			delete(c.open, v) // its slot is free now; Close below finds it gone
			c.evicted++
			c.mu.Unlock()
			_ = v.Conn.Close()
			// Let the connections accepted before read their requests:
			// under a flood this loop would otherwise accept (and evict)
			// for a whole time slice while they wait to be scheduled.
			runtime.Gosched()
			c.mu.Lock()
			continue
		}
		c.freed.Wait()
		skip = nil
	}
	c.open[t] = struct{}{}
	c.mu.Unlock()
	return t, nil
}

// oldestIdle is the idle connection to close first, nil when none is
// idle: the one idle longest, counted from its accept for a connection
// that has not finished a request's headers (a slowloris that keeps
// sending a byte gains nothing), from its last answer for a keep-alive
// one; none in skip.
func (c *Conns) oldestIdle(skip map[*trackedConn]bool) *trackedConn {
	var o *trackedConn
	for t := range c.open {
		if !t.busy && t.reading && !t.waiting && !skip[t] && (o == nil || t.idleSince.Before(o.idleSince)) {
			o = t
		}
	}
	return o
}

// trackedConn is a connection of Conns.
type trackedConn struct {
	net.Conn
	owner *Conns
	// busy, reading, waiting and idleSince are under owner.mu.
	busy      bool
	reading   bool // its server waits in Read
	waiting   bool // for a CPU token
	idleSince time.Time
	closeOnce sync.Once
}

func (t *trackedConn) setState(s http.ConnState) {
	c := t.owner
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateActive:
		t.busy = true
	case http.StateNew: // idle since its accept
		t.busy = false
	case http.StateIdle:
		t.busy, t.idleSince = false, time.Now()
	case http.StateHijacked, http.StateClosed:
		t.busy = true // not ours to evict any more; Close frees the slot
	}
}

// Read tells the listener that the connection may be closed while its
// server waits for bytes.
func (t *trackedConn) Read(p []byte) (int, error) {
	c := t.owner
	c.mu.Lock()
	t.reading = true
	c.freed.Signal()
	c.mu.Unlock()
	n, err := t.Conn.Read(p)
	c.mu.Lock()
	t.reading = false
	c.mu.Unlock()
	return n, err
}

// setWaiting tells whether the connection waits for a CPU token.
func (t *trackedConn) setWaiting(w bool) {
	c := t.owner
	c.mu.Lock()
	defer c.mu.Unlock()
	t.waiting = w
	if !w {
		c.freed.Signal() // it may be evicted again
	}
}

// Close closes the connection and frees its slot.
func (t *trackedConn) Close() error {
	err := t.Conn.Close()
	t.closeOnce.Do(func() {
		c := t.owner
		c.mu.Lock()
		delete(c.open, t)
		c.freed.Signal()
		c.mu.Unlock()
	})
	return err
}
