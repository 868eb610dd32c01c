package mcpclient

import (
	"net"
	"syscall"
)

// h1Usable reports whether the raw calls use h1Transport: on Linux, where
// an idle connection can be checked (see h1_peek_other.go).
const h1Usable = true

// aliveCheck returns the check that an idle connection c is still usable:
// a non-blocking peek finds nothing to read. An end of stream means the
// server closed it; data means the server sent something unasked (an error
// before closing, say); either way the connection is done. A read deadline
// in the past would not tell: Go's poller then fails the read without
// asking the kernel. The check is built once per connection and must not
// run concurrently with itself.
func aliveCheck(c net.Conn) func() bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return assumeAlive
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return assumeAlive
	}
	var open bool
	peek := func(fd uintptr) bool {
		var b [1]byte
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				open = err == syscall.EAGAIN
				return true // done, whatever it found: never wait
			}
		}
	}
	return func() bool {
		open = false
		return raw.Read(peek) == nil && open
	}
}
