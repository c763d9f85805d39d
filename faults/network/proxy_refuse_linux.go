package network

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listenKeepingPort listens on addr. For port 0 on an IP literal it binds
// the port the kernel picks by number (through a socket that holds it
// meanwhile), so that the listener keeps its port when it stops listening
// (pauseListener): a socket bound to port 0 gives its port back then.
// pausable reports whether pauseListener may be used on the listener.
func listenKeepingPort(ctx context.Context, addr string) (net.Listener, bool, error) {
	var lc net.ListenConfig
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, err
	}
	if port != "0" {
		ln, err := lc.Listen(ctx, "tcp", addr)
		return ln, err == nil, err
	}
	ip := net.ParseIP(host)
	if ip == nil && host != "" {
		ln, err := lc.Listen(ctx, "tcp", addr)
		return ln, false, err // a name: no port to pick by number
	}
	p, closeHolder, err := holdPort(ip)
	if err != nil {
		ln, err := lc.Listen(ctx, "tcp", addr)
		return ln, false, err
	}
	defer closeHolder()
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(p)))
	return ln, err == nil, err
}

// holdPort binds a socket with SO_REUSEADDR to ip:0 without listening and
// returns the port the kernel picked; the port stays taken until
// closeHolder.
func holdPort(ip net.IP) (int, func(), error) {
	family := syscall.AF_INET6
	var sa syscall.Sockaddr
	if ip4 := ip.To4(); ip4 != nil {
		family = syscall.AF_INET
		s := &syscall.SockaddrInet4{}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		s := &syscall.SockaddrInet6{}
		if ip != nil {
			copy(s.Addr[:], ip.To16())
		}
		sa = s
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, os.NewSyscallError("socket", err)
	}
	closeHolder := func() { syscall.Close(fd) }
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		closeHolder()
		return 0, nil, os.NewSyscallError("setsockopt", err)
	}
	if family == syscall.AF_INET6 && ip == nil {
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 0) // as Go's dual-stack listener
	}
	if err := syscall.Bind(fd, sa); err != nil {
		closeHolder()
		return 0, nil, os.NewSyscallError("bind", err)
	}
	got, err := syscall.Getsockname(fd)
	if err != nil {
		closeHolder()
		return 0, nil, os.NewSyscallError("getsockname", err)
	}
	switch s := got.(type) {
	case *syscall.SockaddrInet4:
		return s.Port, closeHolder, nil
	case *syscall.SockaddrInet6:
		return s.Port, closeHolder, nil
	}
	closeHolder()
	return 0, nil, errors.New("getsockname: unexpected address")
}

// pauseListener stops ln listening and keeps its port: connections to it
// are refused until resumeListener, and its Accept fails meanwhile.
func pauseListener(ln net.Listener) error {
	return controlListener(ln, func(fd int) error { return syscall.Shutdown(fd, syscall.SHUT_RD) })
}

// resumeListener makes a paused ln listen again.
func resumeListener(ln net.Listener) error {
	return controlListener(ln, func(fd int) error { return syscall.Listen(fd, listenBacklog()) })
}

func controlListener(ln net.Listener, f func(fd int) error) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return errors.New("not a TCP listener")
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// listenBacklog is the backlog Go's listeners use: the kernel's somaxconn.
func listenBacklog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return syscall.SOMAXCONN
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return syscall.SOMAXCONN
	}
	return n
}
