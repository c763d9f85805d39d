//go:build linux

package network

import (
	"math"
	"net/netip"
	"slices"
	"testing"
)

// TestLossMeasured injects network.loss at 20% and measures it with a UDP
// probe between two namespaces, for each direction and filter, and checks
// that filters that do not match drop nothing.
//
// Tolerance: the kernel drops each packet independently with p = 0.2
// (numgen random, which cannot be seeded), so over n = 4000 datagrams the
// measured loss has σ = sqrt(p(1-p)/n) = 0.63 points; ±3 points is 4.7σ, a
// false alarm about once in 400,000 runs. The accounting itself is exact:
// every datagram that did not arrive must be one the rule counted as
// dropped (the receive buffer is forced large enough to hold the probe).
func TestLossMeasured(t *testing.T) {
	const (
		n         = 4000
		percent   = 20.0
		tolerance = 3.0
	)
	l := nsPair(t)
	ctx := t.Context()
	rx4 := nsListenUDP(t, l.B, l.BAddr)
	port := int(nsUDPPort(rx4))
	tx4 := nsDialUDP(t, l.A, netip.AddrPortFrom(l.BAddr, uint16(port)))
	rx6 := nsListenUDP(t, l.B, l.BAddr6)
	tx6 := nsDialUDP(t, l.A, netip.AddrPortFrom(l.BAddr6, nsUDPPort(rx6)))
	otherPort := port + 1
	if otherPort > 65535 {
		otherPort = port - 1
	}

	if got := nsUDPProbe(t, tx4, rx4, n); got != n {
		t.Fatalf("without a fault %d of %d datagrams arrived; the probe itself loses packets", got, n)
	}

	atB := NetnsTarget{Netns: l.B.Name, Interface: l.BName}
	tests := []struct {
		name     string
		params   NetnsLossParams
		v6       bool
		wantLoss bool
	}{
		{"ingress at the receiver, udp port", NetnsLossParams{NetnsTarget: atB,
			PacketMatch: PacketMatch{Direction: PacketIngress, Protocol: "udp", Port: port}}, false, true},
		{"egress at the sender, peer prefix", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.A.Path, Interface: l.AName},
			PacketMatch: PacketMatch{Direction: PacketEgress, Peer: "192.0.2.0/30"}}, false, true},
		{"egress at the sender, from its port", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.A.Name, Interface: l.AName},
			PacketMatch: PacketMatch{Protocol: "udp", Port: int(nsUDPPort(tx4))}}, false, true},
		// udp keeps the accounting exact: without it the rule also drops
		// some of the pair's neighbour discovery (ICMPv6), as a lossy link would.
		{"both ways on every interface, ipv6", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.B.Name},
			PacketMatch: PacketMatch{Peer: l.AAddr6.String(), Protocol: "udp"}}, true, true},
		{"other protocol", NetnsLossParams{NetnsTarget: atB, PacketMatch: PacketMatch{Protocol: "tcp"}}, false, false},
		{"other port", NetnsLossParams{NetnsTarget: atB, PacketMatch: PacketMatch{Protocol: "udp", Port: otherPort}}, false, false},
		{"other peer", NetnsLossParams{NetnsTarget: atB, PacketMatch: PacketMatch{Peer: "192.0.2.99"}}, false, false},
		{"egress at the receiver", NetnsLossParams{NetnsTarget: atB, PacketMatch: PacketMatch{Direction: PacketEgress}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, rx := tx4, rx4
			if tt.v6 {
				tx, rx = tx6, rx6
			}
			tt.params.Percent = percent
			f, err := NewNetnsLoss("loss", tt.params)
			if err != nil {
				t.Fatal(err)
			}
			log := &nsSpecLog{}
			undo, err := f.Inject(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			var spec nftTableSpec
			nsDecodeSpec(t, log.only(t), KindNFTTable, &spec)

			got := nsUDPProbe(t, tx, rx, n)
			drops, err := nftDrops(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := undo(ctx); err != nil {
				t.Fatalf("Undo: %v", err)
			}

			measured := 100 * float64(n-got) / n
			t.Logf("sent %d, received %d, rule dropped %d: loss %.2f%%", n, got, drops, measured)
			// A rule that does not match the probe may still drop the
			// namespace's own traffic (neighbour discovery leaving B):
			// the accounting is exact only for rules that match the probe.
			if tt.wantLoss && got+int(drops) != n {
				t.Errorf("received %d + dropped by the rule %d = %d, want %d: something else lost packets",
					got, drops, got+int(drops), n)
			}
			if tt.wantLoss {
				if math.Abs(measured-percent) > tolerance {
					t.Errorf("measured loss %.2f%%, want %.0f%% ± %.0f", measured, percent, tolerance)
				}
			} else if got != n {
				t.Errorf("a filter that does not match lost %d of %d datagrams", n-got, n)
			}

			if slices.Contains(nsTables(t, nsOf(t, l, spec.Netns)), spec.Table) {
				t.Errorf("table %s still there after Undo", spec.Table)
			}
			if got := nsUDPProbe(t, tx, rx, n); got != n {
				t.Errorf("after Undo %d of %d datagrams arrived, want all", got, n)
			}
		})
	}
}
