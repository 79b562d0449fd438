package dbconn

import (
	"syscall"
	"time"
)

// userTimeoutControl sets TCP_USER_TIMEOUT on a socket before it connects,
// as libpq does for tcp_user_timeout (setsockopt in connectDBStart).
func userTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(d.Milliseconds()))
		}); err != nil {
			return err
		}
		return serr
	}
}

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT (include/uapi/linux/tcp.h),
// which package syscall does not define.
const tcpUserTimeout = 18
