package testutil

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// PollInterval is how often the waits of this package test their condition.
const PollInterval = 10 * time.Millisecond

// Poll tests cond, then again every PollInterval, until it holds (true) or
// limit has passed (false). cond runs on the calling goroutine.
func Poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// WaitFor polls cond until it holds and fails the test when it does not
// within limit; what names the awaited condition in the failure.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(limit, cond) {
		t.Fatalf("timed out after %v waiting for %s", limit, what)
	}
}

// WaitValue polls get until it succeeds with a value for which cond holds
// and returns that value. It fails the test when none comes within limit,
// naming what and the last value get returned without error.
func WaitValue[T any](t testing.TB, limit time.Duration, what string, get func() (T, error), cond func(T) bool) T {
	t.Helper()
	var last, got T
	ok := Poll(limit, func() bool {
		v, err := get()
		if err != nil {
			return false
		}
		last = v
		if !cond(v) {
			return false
		}
		got = v
		return true
	})
	if !ok {
		t.Fatalf("timed out after %v waiting for %s; last state %+v", limit, what, last)
	}
	return got
}

// FreePorts returns the first of n consecutive ports on 127.0.0.1 that were
// free a moment ago, checked by listening on them. They are drawn below
// Linux's ephemeral range (32768 and up), which the kernel hands to
// outgoing connections: a port from there was seen taken by a connection
// of a busy test run between this check and the caller's bind. Another
// process may still take them; it fails the test when 200 tries find no
// such run.
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	const lo, hi = 20000, 32768 // [lo, hi): below the ephemeral range
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	for range 200 {
		base := lo + rng.IntN(hi-lo-n)
		var lns []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}
