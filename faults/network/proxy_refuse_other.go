//go:build !linux

package network

import (
	"context"
	"errors"
	"net"
)

// listenKeepingPort listens on addr; the listener cannot pause here.
func listenKeepingPort(ctx context.Context, addr string) (net.Listener, bool, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	return ln, false, err
}

var errNoPause = errors.New("a listener cannot stop listening and keep its port on this platform")

func pauseListener(net.Listener) error  { return errNoPause }
func resumeListener(net.Listener) error { return errNoPause }
