package limit

import (
	"net"
	"syscall"
	"unsafe"
)

// pending reports whether bytes wait unread in c's socket (ioctl
// FIONREAD); false when c has no socket or the call fails.
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := int32(0)
	errno := syscall.Errno(0)
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		return false
	}
	return n > 0
}
