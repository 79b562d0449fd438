//go:build !linux

package db

import (
	"syscall"
	"time"
)

// userTimeoutControl is a no-op where TCP_USER_TIMEOUT does not exist
// (libpq ignores tcp_user_timeout there too).
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
