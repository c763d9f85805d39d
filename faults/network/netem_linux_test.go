//go:build linux

package network

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/netnstest"
)

// nsUDPRTT measures the median round trip of count datagrams from tx to an
// echo socket (echo) and back.
func nsUDPRTT(t *testing.T, tx, echo *net.UDPConn, count int) time.Duration {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		for range count {
			m, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				done <- err
				return
			}
			if _, err := echo.WriteToUDPAddrPort(buf[:m], from); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := echo.SetDeadline(time.Now().Add(nsProbeTimeout)); err != nil {
		t.Fatal(err)
	}
	if err := tx.SetDeadline(time.Now().Add(nsProbeTimeout)); err != nil {
		t.Fatal(err)
	}
	rtts := make([]time.Duration, 0, count)
	buf := make([]byte, 64)
	for range count {
		start := time.Now()
		if _, err := tx.Write([]byte("ping")); err != nil {
			t.Fatalf("ping: %v", err)
		}
		if _, err := tx.Read(buf); err != nil {
			t.Fatalf("pong: %v", err)
		}
		rtts = append(rtts, time.Since(start))
	}
	if err := <-done; err != nil {
		t.Fatalf("echo: %v", err)
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// TestDelayNetem adds network.delay on one end of a veth pair and measures
// the round trip. On a kernel without sch_netem (this project's build
// machines) Inject must fail with ErrNoNetem and leave nothing behind; the
// test then skips with that reason, since latency comes from the proxy there.
//
// Tolerance (where netem exists): the median of 20 round trips through a
// 50 ms delay on one direction is 50 ms plus the pair's own round trip
// (well under 1 ms) plus timer slack; 45..80 ms allows for a busy machine.
func TestDelayNetem(t *testing.T) {
	const delay = 50 * time.Millisecond
	l := nsPair(t)
	ctx := t.Context()
	f, err := NewNetnsDelay("slow", NetnsDelayParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: l.BName}, Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	log := &nsSpecLog{}
	undo, err := f.Inject(ctx, log)
	if errors.Is(err, ErrNoNetem) {
		if q := nsRootQdisc(t, l.B, l.BName); q != nil && q.Attrs().Handle != 0 {
			t.Errorf("a failed netem Inject left a root qdisc %s %s", q.Type(), handleString(q.Attrs().Handle))
		}
		if len(log.specs) == 1 {
			// The spec was logged before the attempt; replaying it must be a no-op.
			if err := KernelReverters()[KindTCQdisc](ctx, log.specs[0].Data); err != nil {
				t.Errorf("revert of a netem that never got in: %v", err)
			}
		}
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	echo := nsListenUDP(t, l.B, l.BAddr)
	tx := nsDialUDP(t, l.A, netip.AddrPortFrom(l.BAddr, nsUDPPort(echo)))
	during := nsUDPRTT(t, tx, echo, 20)
	if err := undo(ctx); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	after := nsUDPRTT(t, tx, echo, 20)
	t.Logf("median RTT: with %s netem %s, after Undo %s", delay, during, after)
	if during < delay-5*time.Millisecond || during > delay+30*time.Millisecond {
		t.Errorf("RTT under netem %s, want %s..%s", during, delay-5*time.Millisecond, delay+30*time.Millisecond)
	}
	if after > 10*time.Millisecond {
		t.Errorf("RTT after Undo %s, want the pair's own (well under 10ms)", after)
	}
}

// TestNetemAvailability documents what this kernel offers, from a scratch
// namespace: the answer decides whether network.delay can run here.
func TestNetemAvailability(t *testing.T) {
	ns := netnstest.New(t)
	f, err := NewNetnsDelay("probe", NetnsDelayParams{NetnsTarget: NetnsTarget{Netns: ns.Name, Interface: "lo"}, Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := f.Inject(t.Context(), &nsSpecLog{})
	switch {
	case errors.Is(err, ErrNoNetem):
		t.Logf("sch_netem: absent (%v)", err)
	case err != nil:
		// lo's default root qdisc is noqueue with handle 0, so the only
		// expected failure is the missing module.
		t.Fatalf("Inject on lo: %v, want success or ErrNoNetem", err)
	default:
		t.Log("sch_netem: present")
		if err := undo(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
