package dbconn

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// Bounding lib/pq. lib/pq honours a context only by sending a CancelRequest
// over a second connection, while the query's goroutine stays blocked in the
// socket read: on a network that black-holes, stalls or half-closes the
// connection neither arrives, and the read lasts until the kernel gives up
// (minutes, or forever without keepalive probes). Dialer deadlines do not
// help: lib/pq resets them after the startup handshake. So the exporter owns
// the socket: pgConnector dials it and closes it when Connect's context ends
// first, and pgConn closes it when the context of a watched step ends
// (Session.Step). The blocked read then fails at once, and the connection,
// now invalid, is discarded instead of pooled.

// cancelRequestTimeout bounds lib/pq's CancelRequest connection (dial,
// write, and its read to EOF), which it runs in a goroutine of its own.
const cancelRequestTimeout = 5 * time.Second

// tcpKeepAlive is the keepalive period of the exporter's TCP connections.
const tcpKeepAlive = 15 * time.Second

// pgConnector opens lib/pq connections on sockets it watches.
type pgConnector struct {
	cfg pq.Config
	// userTimeout is the DSN's tcp_user_timeout (0: the system's).
	userTimeout time.Duration
}

func (c *pgConnector) Driver() driver.Driver { return &pq.Driver{} }

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	pc, err := pq.NewConnectorConfig(c.cfg)
	if err != nil {
		return nil, err
	}
	d := &pgDialer{ctx: ctx, userTimeout: c.userTimeout}
	pc.Dialer(d)
	dc, err := pc.Connect(ctx)
	nc := d.finish()
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if ctx.Err() != nil { // the handshake ended by our closing the socket
		_ = dc.Close()
		return nil, context.Cause(ctx)
	}
	full, err := asDriverConn(dc)
	if err != nil {
		return nil, err
	}
	return &pgConn{driverConn: full, sock: nc}, nil
}

// pgDialer dials the sockets of one Connect: while it runs, each socket is
// closed when the context of Connect ends; afterwards (lib/pq's
// CancelRequest connections) each socket gets a fixed deadline.
type pgDialer struct {
	ctx         context.Context
	userTimeout time.Duration

	mu      sync.Mutex
	done    bool
	last    net.Conn
	stopAll []func() bool
}

func (d *pgDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d *pgDialer) DialTimeout(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, addr)
}

func (d *pgDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	connecting := !d.done
	d.mu.Unlock()
	var cancel context.CancelFunc
	if connecting {
		ctx, cancel = mergeCancel(ctx, d.ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, cancelRequestTimeout)
	}
	defer cancel()
	nd := net.Dialer{KeepAlive: tcpKeepAlive}
	if d.userTimeout > 0 {
		nd.Control = userTimeoutControl(d.userTimeout)
	}
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done { // a CancelRequest connection, or Connect ended meanwhile
		_ = nc.SetDeadline(time.Now().Add(cancelRequestTimeout))
		return nc, nil
	}
	d.last = nc
	d.stopAll = append(d.stopAll, context.AfterFunc(d.ctx, func() { _ = nc.Close() }))
	return nc, nil
}

// finish ends the watch of Connect's context and returns the socket of the
// connection (the last one dialed).
func (d *pgDialer) finish() net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done = true
	for _, stop := range d.stopAll {
		stop()
	}
	return d.last
}

// mergeCancel returns a context that ends with a or b.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(nil) }
}

// driverConn is what database/sql uses of a driver's connection; both
// drivers' connections implement all of it, and the wrappers below embed it
// and override only what they change.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.QueryerContext
	driver.ExecerContext
	driver.ConnPrepareContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// asDriverConn checks that a driver's connection is a driverConn, closing
// it when it is not.
func asDriverConn(c driver.Conn) (driverConn, error) {
	dc, ok := c.(driverConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("the database driver's connection (%T) lacks a method database/sql uses", c)
	}
	return dc, nil
}

// pgConn is a lib/pq connection whose socket the exporter can close.
type pgConn struct {
	driverConn
	sock   net.Conn
	killed atomic.Bool
}

// watchedConn is a driver connection that can be closed from outside when a
// context ends (see pgConn.watch).
type watchedConn interface {
	watch(ctx context.Context) (stop func() bool)
}

var (
	_ watchedConn      = (*pgConn)(nil)
	_ driverConn       = (*pgConn)(nil)
	_ driver.Connector = (*pgConnector)(nil)
	_ pq.DialerContext = (*pgDialer)(nil)
)

// watch closes the socket when ctx ends, until stop is called.
func (c *pgConn) watch(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, c.kill)
}

func (c *pgConn) kill() {
	if c.killed.CompareAndSwap(false, true) && c.sock != nil {
		_ = c.sock.Close()
	}
}

func (c *pgConn) ResetSession(ctx context.Context) error {
	if c.killed.Load() {
		return driver.ErrBadConn
	}
	return c.driverConn.ResetSession(ctx)
}

func (c *pgConn) IsValid() bool {
	return !c.killed.Load() && c.driverConn.IsValid()
}
