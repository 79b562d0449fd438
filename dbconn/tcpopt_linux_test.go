package dbconn

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestTCPUserTimeout: tcp_user_timeout in the DSN (libpq's milliseconds)
// reaches the sockets the PostgreSQL dialer opens; a bad value names the
// option.
func TestTCPUserTimeout(t *testing.T) {
	d, err := parseDSN("postgresql://u@127.0.0.1/ironic?tcp_user_timeout=4321")
	if err != nil {
		t.Fatal(err)
	}
	pg := d.(*postgres)
	for _, ign := range pg.dropped {
		if ign == "tcp_user_timeout" {
			t.Error("tcp_user_timeout reported as ignored")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dl := &pgDialer{ctx: context.Background(), userTimeout: pg.conn.userTimeout}
	c, err := dl.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	raw.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout) })
	if gerr != nil || got != 4321 {
		t.Errorf("TCP_USER_TIMEOUT = %d (%v), want 4321", got, gerr)
	}
	if pg.conn.userTimeout != 4321*time.Millisecond {
		t.Errorf("userTimeout %s", pg.conn.userTimeout)
	}
	if _, err := parseDSN("postgresql://u@127.0.0.1/ironic?tcp_user_timeout=5s"); err == nil {
		t.Error("tcp_user_timeout=5s accepted")
	}
}
