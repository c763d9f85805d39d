//go:build linux

package network

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/netnstest"
)

// Bounds of the socket probes. nsProbeTimeout caps a whole probe. nsProbeDrain
// is how long the receiver keeps reading after the last send: on a veth pair
// a datagram reaches the receiving socket inside the sender's sendto (the
// peer's receive path runs in the sender's softirq), so it is only slack for
// a loaded machine whose softirqs were pushed to ksoftirqd.
const (
	nsProbeTimeout = 10 * time.Second
	nsProbeDrain   = 500 * time.Millisecond
)

// nsPair makes two namespaces joined by a veth pair (skips when it cannot).
func nsPair(t *testing.T) *netnstest.Link {
	t.Helper()
	return netnstest.Connect(t, netnstest.New(t), netnstest.New(t))
}

// nsOpen opens ns for the duration of the test.
func nsOpen(t *testing.T, ns *netnstest.NS) netns.NsHandle {
	t.Helper()
	h, err := netns.GetFromPath(ns.Path)
	if err != nil {
		t.Fatalf("open %s: %v", ns.Path, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// nsTables lists the inet tables in ns.
func nsTables(t *testing.T, ns *netnstest.NS) []string {
	t.Helper()
	conn, err := nftables.New(nftables.WithNetNSFd(int(nsOpen(t, ns))))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatalf("list tables in %s: %v", ns.Name, err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	return names
}

// nsNetlink is a netlink handle into ns.
func nsNetlink(t *testing.T, ns *netnstest.NS) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(nsOpen(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// nsRootQdisc returns the root qdisc of link in ns (nil when none).
func nsRootQdisc(t *testing.T, ns *netnstest.NS, link string) netlink.Qdisc {
	t.Helper()
	h := nsNetlink(t, ns)
	l, err := h.LinkByName(link)
	if err != nil {
		t.Fatal(err)
	}
	q, err := rootQdisc(h, l)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// nsHasQdisc says whether link in ns has a qdisc with handle.
func nsHasQdisc(t *testing.T, ns *netnstest.NS, link string, handle uint32) bool {
	t.Helper()
	h := nsNetlink(t, ns)
	l, err := h.LinkByName(link)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(qs, func(q netlink.Qdisc) bool { return q.Attrs().Handle == handle })
}

// nsDecodeSpec reads a RevertSpec's data into v.
func nsDecodeSpec(t *testing.T, s faults.RevertSpec, kind string, v any) {
	t.Helper()
	if s.Kind != kind {
		t.Fatalf("spec kind %q, want %q", s.Kind, kind)
	}
	if err := json.Unmarshal(s.Data, v); err != nil {
		t.Fatal(err)
	}
}

// nsDo runs fn inside ns, failing t on error.
func nsDo(t *testing.T, ns *netnstest.NS, fn func() error) {
	t.Helper()
	if err := ns.Do(fn); err != nil {
		t.Fatalf("in %s: %v", ns.Name, err)
	}
}

// nsListenUDP opens a UDP socket on addr inside ns, with a receive buffer that
// holds a whole probe, so that the socket itself never drops.
func nsListenUDP(t *testing.T, ns *netnstest.NS, addr netip.Addr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	nsDo(t, ns, func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	})
	t.Cleanup(func() { c.Close() })
	nsForceRcvBuf(t, c, 64<<20)
	return c
}

// nsForceRcvBuf sets SO_RCVBUFFORCE (root may pass net.core.rmem_max).
func nsForceRcvBuf(t *testing.T, c syscall.Conn, n int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v", serr)
	}
}

// nsDialUDP opens a UDP socket inside ns connected to dst.
func nsDialUDP(t *testing.T, ns *netnstest.NS, dst netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	nsDo(t, ns, func() (err error) {
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		return err
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// nsUDPPort is the local port of c.
func nsUDPPort(c *net.UDPConn) uint16 { return c.LocalAddr().(*net.UDPAddr).AddrPort().Port() }

// nsUDPProbe sends n numbered datagrams through tx and returns how many
// distinct ones rx received. A send refused with EPERM is a packet that an
// egress rule dropped (the kernel tells the local sender); it counts as
// sent.
func nsUDPProbe(t *testing.T, tx, rx *net.UDPConn, n int) int {
	t.Helper()
	if err := rx.SetReadDeadline(time.Now().Add(nsProbeTimeout)); err != nil {
		t.Fatal(err)
	}
	got := 0
	done := make(chan error, 1)
	go func() {
		seen := make([]bool, n)
		buf := make([]byte, 64)
		for got < n {
			m, err := rx.Read(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				done <- err
				return
			}
			if i := binary.BigEndian.Uint64(buf); m == 8 && i < uint64(n) && !seen[i] {
				seen[i] = true
				got++
			}
		}
		done <- nil
	}()
	buf := make([]byte, 8)
	for i := range n {
		binary.BigEndian.PutUint64(buf, uint64(i))
		if _, err := tx.Write(buf); err != nil && !errors.Is(err, unix.EPERM) {
			t.Errorf("send %d: %v", i, err)
			break
		}
	}
	if err := rx.SetReadDeadline(time.Now().Add(nsProbeDrain)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("receive: %v", err)
	}
	return got
}

// nsListenTCP opens a TCP listener on addr inside ns.
func nsListenTCP(t *testing.T, ns *netnstest.NS, addr netip.Addr) *net.TCPListener {
	t.Helper()
	var l *net.TCPListener
	nsDo(t, ns, func() (err error) {
		l, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	})
	t.Cleanup(func() { l.Close() })
	return l
}

// nsDialTCP connects from inside ns to dst within timeout.
func nsDialTCP(ns *netnstest.NS, dst netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", dst.String(), timeout)
		return err
	})
	return c, err
}

// nsTCPConnects says whether a TCP connection from src to l's address
// succeeds within timeout.
func nsTCPConnects(t *testing.T, src *netnstest.NS, l *net.TCPListener, timeout time.Duration) bool {
	t.Helper()
	c, err := nsDialTCP(src, l.Addr().(*net.TCPAddr).AddrPort(), timeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func TestKernelReverterGuards(t *testing.T) {
	revs := KernelReverters()
	if len(revs) != 2 || revs[KindNFTTable] == nil || revs[KindTCQdisc] == nil {
		t.Fatalf("KernelReverters() = %v, want %s and %s", revs, KindNFTTable, KindTCQdisc)
	}
	tests := []struct {
		name, kind, data, want string
	}{
		{"foreign table", KindNFTTable, `{"netns":"/var/run/netns/x","family":"inet","table":"filter"}`, "does not start with"},
		{"foreign family", KindNFTTable, `{"netns":"","family":"ip","table":"llmchaos_x"}`, "inet tables only"},
		{"relative netns", KindNFTTable, `{"netns":"x","family":"inet","table":"llmchaos_x"}`, "not an absolute path"},
		{"unknown field", KindNFTTable, `{"netns":"","family":"inet","table":"llmchaos_x","extra":1}`, "unknown field"},
		{"low handle", KindTCQdisc, `{"netns":"","link":"eth0","handle":65536,"qdisc":"tbf"}`, "not one llmchaos hands out"},
		{"minor handle", KindTCQdisc, `{"netns":"","link":"eth0","handle":268435457,"qdisc":"tbf"}`, "not one llmchaos hands out"},
		{"foreign kind", KindTCQdisc, `{"netns":"","link":"eth0","handle":268435456,"qdisc":"htb"}`, "tbf and netem only"},
		{"no link", KindTCQdisc, `{"netns":"","link":"","handle":268435456,"qdisc":"tbf"}`, "link is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := revs[tt.kind](context.Background(), json.RawMessage(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// nsOf returns the end of l whose namespace file is path.
func nsOf(t *testing.T, l *netnstest.Link, path string) *netnstest.NS {
	t.Helper()
	for _, ns := range []*netnstest.NS{l.A, l.B} {
		if ns.Path == path {
			return ns
		}
	}
	t.Fatalf("namespace %q is neither end of the link", path)
	return nil
}
