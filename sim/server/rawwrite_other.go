//go:build !unix

package server

import (
	"errors"
	"net"
	"syscall"
)

// rawConnOf returns nil: streams are written by their handlers alone.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func sysWrite(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
