package limit

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// CPU is a listener whose connections share n tokens (n = GOMAXPROCS for
// the doors): a connection's goroutine takes one after each Read that got
// bytes, holds it while it computes on them (the TLS handshake after the
// ClientHello, decrypting and parsing a request, writing an answer) and
// gives it back at its next Read or Write, and while a handler runs
// (handlers have bounds of their own: renders, requests, bcrypt, Keystone). A flood through one listener then
// queues on its n tokens, blocked rather than runnable, instead of taking
// the Go scheduler from the other listeners: their goroutines wait behind
// at most n of the flood's, not behind thousands. A connection waits for
// a token until its read deadline (the server's header, read or idle
// timeout), then is closed without more work. The server's ConnContext
// and handler are set by Track.
type CPU struct {
	net.Listener
	tokens chan struct{}
}

// NewCPU lets l's connections compute at most n at once (n > 0).
func NewCPU(l net.Listener, n int) *CPU {
	return &CPU{Listener: l, tokens: make(chan struct{}, max(1, n))}
}

// Accept accepts a connection that takes a token after each Read or Write.
func (c *CPU) Accept() (net.Conn, error) {
	raw, err := c.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return c.wrap(raw), nil
}

// wrap makes raw a connection of c.
func (c *CPU) wrap(raw net.Conn) *cpuConn {
	cc := &cpuConn{Conn: raw, tokens: c.tokens, closed: make(chan struct{}), moved: make(chan struct{}, 1)}
	if t, ok := raw.(*trackedConn); ok { // under a Conns cap
		cc.onWait = t.setWaiting
	}
	return cc
}

// errCPUWait is a connection's Read or Write when no token came before its
// read deadline, or when it was closed while waiting. It is a timeout
// (net.Error): net/http ends its background read (the one byte it reads
// while a handler runs) by moving the read deadline to the past, and keeps
// the byte read only when the error is a timeout.
var errCPUWait net.Error = cpuWaitError{}

type cpuWaitError struct{}

func (cpuWaitError) Error() string   { return "limit: no CPU token before the read deadline" }
func (cpuWaitError) Timeout() bool   { return true }
func (cpuWaitError) Temporary() bool { return true }

// cpuConn is a connection of CPU.
type cpuConn struct {
	net.Conn
	tokens    chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	moved     chan struct{} // a new read deadline, or a handler started
	waiting   sync.Mutex    // held by the goroutine waiting for a token
	// onWait, when set (over Conns), is told when a wait for a token starts
	// and ends: a connection waiting is not idle, and evicting it would
	// throw away the work done for it (under a flood, every handshake).
	onWait func(bool)

	mu        sync.Mutex
	held      bool      // a token is held
	inHandler int       // handlers running (HTTP/2: one per stream): the I/O takes no token
	deadline  time.Time // the read deadline
}

// Read never drops what it read: with no token, the bytes come back with
// errCPUWait (the next request's first byte, read by net/http's background
// read, would otherwise be lost and the request parsed without it).
func (c *cpuConn) Read(p []byte) (int, error) {
	c.release()
	n, err := c.Conn.Read(p)
	if n > 0 && !c.acquire() {
		return n, errCPUWait
	}
	return n, err
}

// Write gives the token back and takes none after: what follows a write
// is a read (the next record of a handshake, the next request), which
// takes one, or closing. Waiting for a token after a write deadlocked a
// server's Close: it writes TLS's close_notify while holding the
// server's lock, which the connection holding the token waits for.
func (c *cpuConn) Write(p []byte) (int, error) {
	c.release()
	return c.Conn.Write(p)
}

func (c *cpuConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.release()
	return c.Conn.Close()
}

func (c *cpuConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *cpuConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *cpuConn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	c.wake()
}

// release gives the token back, if held.
func (c *cpuConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		c.held = false
		<-c.tokens
	}
}

// acquire takes a token (none while a handler runs), waiting until the
// read deadline; false when none came or the connection was closed. One
// goroutine of the connection waits at a time (net/http's background read
// may wait beside the serving one, which then finds the token held).
func (c *cpuConn) acquire() bool {
	c.waiting.Lock()
	defer c.waiting.Unlock()
	waited := false
	for {
		c.mu.Lock()
		if c.held || c.inHandler > 0 {
			c.mu.Unlock()
			return true
		}
		deadline := c.deadline
		c.mu.Unlock()
		select {
		case c.tokens <- struct{}{}:
			return c.took()
		default:
		}
		if !waited && c.onWait != nil {
			waited = true
			c.onWait(true)
			defer c.onWait(false)
		}
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case c.tokens <- struct{}{}:
			return c.took()
		case <-c.moved: // a new deadline, or a handler started
		case <-timeout:
			return false
		case <-c.closed:
			return false
		}
	}
}

// took records the token acquire took, or gives it back when a handler
// started meanwhile (a handler holds none).
func (c *cpuConn) took() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inHandler > 0 {
		<-c.tokens
	} else {
		c.held = true
	}
	return true
}

// wake tells a waiting acquire to look again.
func (c *cpuConn) wake() {
	select {
	case c.moved <- struct{}{}:
	default:
	}
}

// handler counts a handler starting (running true) or ending, giving the
// token back when one starts.
func (c *cpuConn) handler(running bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !running {
		c.inHandler--
		return
	}
	c.inHandler++
	if c.held {
		c.held = false
		<-c.tokens
	}
	c.wake()
}

type cpuKey struct{}

// under finds the connection of type T under c (TLS, CPU, Conns), the
// zero T when there is none.
func under[T net.Conn](c net.Conn) T {
	for c != nil {
		if t, ok := c.(T); ok {
			return t
		}
		switch x := c.(type) {
		case *cpuConn:
			c = x.Conn
		case *trackedConn:
			c = x.Conn
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			c = nil
		}
	}
	var zero T
	return zero
}

// freeCPU gives the connection's token back while h runs.
func freeCPU(h http.Handler) http.Handler {
	if h == nil {
		h = http.DefaultServeMux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(cpuKey{}).(*cpuConn); ok {
			c.handler(true)
			defer c.handler(false)
		}
		h.ServeHTTP(w, r)
	})
}

// cpuContext is a ConnContext putting the connection's cpuConn in the
// requests' context.
func cpuContext(prev func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if prev != nil {
			ctx = prev(ctx, c)
		}
		if cc := under[*cpuConn](c); cc != nil {
			ctx = context.WithValue(ctx, cpuKey{}, cc)
		}
		return ctx
	}
}
