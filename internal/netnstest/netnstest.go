//go:build linux

package netnstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// cmdTimeout bounds each `ip` command.
const cmdTimeout = 10 * time.Second

// NS is a network namespace made for one test.
type NS struct {
	// Name is the namespace's name for `ip netns` (llmc-<random>).
	Name string
	// Path is its file under /var/run/netns.
	Path string
}

// Require skips t unless it runs as root with a working `ip netns`.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to create network namespaces")
	}
}

// New creates a namespace with its loopback up and deletes it when t ends.
// It skips t (see Require) when namespaces cannot be made here.
func New(t testing.TB) *NS {
	t.Helper()
	Require(t)
	name := "llmc-" + randHex(t, 4)
	if out, err := ip(t.Context(), "netns", "add", name); err != nil {
		t.Skipf("ip netns add failed, so network namespaces are not available here: %v: %s", err, out)
	}
	ns := &NS{Name: name, Path: filepath.Join("/var/run/netns", name)}
	t.Cleanup(func() {
		if _, err := os.Stat(ns.Path); errors.Is(err, os.ErrNotExist) {
			return // the test deleted it
		}
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		if out, err := ip(ctx, "netns", "del", name); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	ns.MustIP(t, "link", "set", "lo", "up")
	return ns
}

// Delete deletes the namespace now (with everything in it), as an operator
// tearing a target down would.
func (ns *NS) Delete(t testing.TB) {
	t.Helper()
	if out, err := ip(t.Context(), "netns", "del", ns.Name); err != nil {
		t.Fatalf("ip netns del %s: %v: %s", ns.Name, err, out)
	}
}

// Renew deletes the namespace and creates a new, empty one under the same
// name (a different namespace to the kernel).
func (ns *NS) Renew(t testing.TB) {
	t.Helper()
	ns.Delete(t)
	if out, err := ip(t.Context(), "netns", "add", ns.Name); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns.Name, err, out)
	}
	ns.MustIP(t, "link", "set", "lo", "up")
}

// MustIP runs `ip -n NAME ARGS...` and fails t on error.
func (ns *NS) MustIP(t testing.TB, args ...string) string {
	t.Helper()
	out, err := ip(t.Context(), append([]string{"-n", ns.Name}, args...)...)
	if err != nil {
		t.Fatalf("ip -n %s %s: %v: %s", ns.Name, strings.Join(args, " "), err, out)
	}
	return out
}

// Link is a veth pair between two namespaces with an IPv4 and an IPv6
// address at each end.
type Link struct {
	// A and B are the two ends' namespaces.
	A, B *NS
	// AName and BName are the interfaces' names, in A and in B.
	AName, BName string
	// AAddr and BAddr are the IPv4 addresses (192.0.2.1 and .2).
	AAddr, BAddr netip.Addr
	// AAddr6 and BAddr6 are the IPv6 addresses (fd00:6c6c:6d63::1 and ::2).
	AAddr6, BAddr6 netip.Addr
}

// Connect joins a and b by a veth pair, both ends up and addressed. The
// pair goes with its namespaces.
func Connect(t testing.TB, a, b *NS) *Link {
	t.Helper()
	id := randHex(t, 4)
	l := &Link{
		A: a, B: b,
		AName: "lva" + id, BName: "lvb" + id,
		AAddr: netip.MustParseAddr("192.0.2.1"), BAddr: netip.MustParseAddr("192.0.2.2"),
		AAddr6: netip.MustParseAddr("fd00:6c6c:6d63::1"), BAddr6: netip.MustParseAddr("fd00:6c6c:6d63::2"),
	}
	if out, err := ip(t.Context(), "link", "add", "name", l.AName, "netns", a.Name,
		"type", "veth", "peer", "name", l.BName, "netns", b.Name); err != nil {
		t.Fatalf("create veth pair: %v: %s", err, out)
	}
	a.MustIP(t, "addr", "add", l.AAddr.String()+"/24", "dev", l.AName)
	b.MustIP(t, "addr", "add", l.BAddr.String()+"/24", "dev", l.BName)
	// nodad: the address is usable at once, not after duplicate detection.
	a.MustIP(t, "-6", "addr", "add", l.AAddr6.String()+"/64", "dev", l.AName, "nodad")
	b.MustIP(t, "-6", "addr", "add", l.BAddr6.String()+"/64", "dev", l.BName, "nodad")
	a.MustIP(t, "link", "set", l.AName, "up")
	b.MustIP(t, "link", "set", l.BName, "up")
	a.waitOperUp(t, l.AName)
	b.waitOperUp(t, l.BName)
	return l
}

// linkUpTimeout bounds the wait for a new link to come up. The kernel's
// linkwatch applies carrier changes with up to a second's delay.
const linkUpTimeout = 5 * time.Second

// waitOperUp waits until the kernel reports link name in ns as
// operationally up. Until then its transmit queue has no qdisc attached and
// drops every packet, so a probe sent earlier loses its first packets (a
// TCP SYN then waits a full second for its retransmission).
func (ns *NS) waitOperUp(t testing.TB, name string) {
	t.Helper()
	h, err := netns.GetFromPath(ns.Path)
	if err != nil {
		t.Fatalf("open %s: %v", ns.Path, err)
	}
	defer h.Close()
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	defer close(done)
	var subErr error
	if err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{
		Namespace:     &h,
		ListExisting:  true, // the current state first, then every change
		ErrorCallback: func(err error) { subErr = err },
	}); err != nil {
		t.Fatalf("subscribe to links in %s: %v", ns.Name, err)
	}
	timer := time.NewTimer(linkUpTimeout)
	defer timer.Stop()
	for {
		select {
		case u, ok := <-updates:
			if !ok {
				t.Fatalf("link updates in %s ended: %v", ns.Name, subErr)
			}
			if u.Attrs().Name == name && u.Attrs().OperState == netlink.OperUp {
				return
			}
		case <-timer.C:
			t.Fatalf("%s in %s not up after %s", name, ns.Name, linkUpTimeout)
		}
	}
}

// Do runs fn on an OS thread switched into ns, so that the sockets fn opens
// live in ns; they stay there when used from other goroutines afterwards.
// The thread is switched back before it is released; if that fails, the
// thread is discarded (it stays locked and dies with its goroutine).
func (ns *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(ns.Path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open %s: %w", ns.Path, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter %s: %w", ns.Name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leave %s: %w", ns.Name, err))
			return // the thread stays locked: the runtime discards it
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ip runs the ip command with args.
func ip(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// randHex returns n random bytes in hex, for unique names.
func randHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random name: %v", err)
	}
	return hex.EncodeToString(b)
}
