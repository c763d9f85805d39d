//go:build unix

package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawConnOf returns the socket under a hijacked connection, through the
// server's own wrappers, or nil when it is not a TCP connection.
func rawConnOf(c net.Conn) syscall.RawConn {
	for {
		switch x := c.(type) {
		case *prefixConn: // replays read bytes; writes go straight through
			c = x.Conn
		case *net.TCPConn:
			rc, err := x.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		default:
			return nil
		}
	}
}

// sysWrite is one write(2) on fd, which the runtime's poller keeps
// non-blocking.
func sysWrite(fd uintptr, b []byte) (int, error) { return unix.Write(int(fd), b) }
