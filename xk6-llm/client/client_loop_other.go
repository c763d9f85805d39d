//go:build !linux

package client

import "net/netip"

// eventLoopAvailable reports whether this platform has the event loop:
// not here; every request goes through net/http.
const eventLoopAvailable = false

type evLoops struct{}

type evLoop struct{}

type evConn struct{}

func newEvLoops(*Client, int, []netip.Addr) *evLoops { return nil }

func (*evLoops) ready() bool          { return false }
func (*evLoops) route(*evReq) *evLoop { return nil }
func (*evLoops) close()               {}
func (*evLoops) stats() IOStats       { return IOStats{} }
func (*evLoop) submit(*evReq)         {}
func (*evLoop) cancel(evCancel)       {}
