//go:build linux

package network

import (
	"net/netip"
	"testing"
	"time"
)

// TestPartition cuts a namespace off and checks that nothing gets through
// (UDP datagrams, a TCP handshake) and that traffic flows again after Undo.
func TestPartition(t *testing.T) {
	const (
		n = 200
		// dialTimeout bounds a handshake that cannot complete; on a veth pair
		// a working one takes well under a millisecond.
		dialTimeout = 300 * time.Millisecond
	)
	l := nsPair(t)
	ctx := t.Context()
	rx := nsListenUDP(t, l.B, l.BAddr)
	tx := nsDialUDP(t, l.A, netip.AddrPortFrom(l.BAddr, nsUDPPort(rx)))
	srv := nsListenTCP(t, l.B, l.BAddr)

	if got := nsUDPProbe(t, tx, rx, n); got != n || !nsTCPConnects(t, l.A, srv, dialTimeout) {
		t.Fatalf("without a fault: %d of %d datagrams arrived, want all, and TCP must connect", got, n)
	}

	atB := NetnsTarget{Netns: l.B.Name}
	tests := []struct {
		name    string
		params  NetnsPartitionParams
		wantUDP bool // a→b datagrams arrive
		wantTCP bool // a→b handshake completes
	}{
		{"everything", NetnsPartitionParams{NetnsTarget: atB}, false, false},
		{"one interface", NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: l.BName}}, false, false},
		{"from the peer", NetnsPartitionParams{NetnsTarget: atB, PacketMatch: PacketMatch{Peer: l.AAddr.String()}}, false, false},
		// Egress only: a's packets arrive, but b's SYN-ACK never leaves.
		{"egress only", NetnsPartitionParams{NetnsTarget: atB, PacketMatch: PacketMatch{Direction: PacketEgress}}, true, false},
		{"udp only", NetnsPartitionParams{NetnsTarget: atB, PacketMatch: PacketMatch{Protocol: "udp"}}, false, true},
		{"another peer", NetnsPartitionParams{NetnsTarget: atB, PacketMatch: PacketMatch{Peer: "192.0.2.99"}}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewNetnsPartition("cut", tt.params)
			if err != nil {
				t.Fatal(err)
			}
			undo, err := f.Inject(ctx, &nsSpecLog{})
			if err != nil {
				t.Fatal(err)
			}
			gotUDP := nsUDPProbe(t, tx, rx, n)
			gotTCP := nsTCPConnects(t, l.A, srv, dialTimeout)
			if err := undo(ctx); err != nil {
				t.Fatalf("Undo: %v", err)
			}
			if want := map[bool]int{true: n, false: 0}[tt.wantUDP]; gotUDP != want {
				t.Errorf("during the partition %d of %d datagrams arrived, want %d", gotUDP, n, want)
			}
			if gotTCP != tt.wantTCP {
				t.Errorf("during the partition TCP connected = %v, want %v", gotTCP, tt.wantTCP)
			}
			if got := nsUDPProbe(t, tx, rx, n); got != n {
				t.Errorf("after Undo %d of %d datagrams arrived, want all", got, n)
			}
			if !nsTCPConnects(t, l.A, srv, dialTimeout) {
				t.Error("after Undo TCP does not connect")
			}
		})
	}
}
