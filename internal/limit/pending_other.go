//go:build !linux

package limit

import "net"

// pending reports whether bytes wait unread in c's socket: not known off
// Linux, where a connection is judged by its state alone.
func pending(net.Conn) bool { return false }
