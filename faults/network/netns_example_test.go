package network_test

import (
	"fmt"

	"github.com/llmchaos/llmchaos/faults/network"
)

// Validate reports every problem at once, after defaults were applied in
// their own step.
func ExampleNetnsLossParams_Validate() {
	p := network.NetnsLossParams{
		PacketMatch: network.PacketMatch{Protocol: "sctp", Port: 80},
		Percent:     120,
	}
	fmt.Println(p.WithDefaults().Validate())
	// Output:
	// netns: required; name the target's network namespace (set allow_root_namespace: true to act on the namespace llmchaos runs in)
	// protocol: "sctp" is not one of tcp, udp (or leave it empty for all)
	// percent: must be in (0, 100], got 120
}

func ExampleParseBitRate() {
	for _, s := range []string{"1mbit", "512kbit", "1.5mbit", "1mbps"} {
		r, err := network.ParseBitRate(s)
		fmt.Println(uint64(r), r, err)
	}
	// Output:
	// 1000000 1mbit <nil>
	// 512000 512kbit <nil>
	// 1500000 1500kbit <nil>
	// 0 0bit rate "1mbps": write bits per second as bit, kbit, mbit or gbit (tc's bps means bytes)
}

// A fault is built from its params, as decoded from an experiment file;
// the runner injects it (journaling its RevertSpec first), and recover
// replays journaled specs through KernelReverters.
func ExampleNewNetnsLoss() {
	f, err := network.NewNetnsLoss("lossy-net", network.NetnsLossParams{
		NetnsTarget: network.NetnsTarget{Netns: "app", Interface: "veth0"},
		PacketMatch: network.PacketMatch{Direction: network.PacketIngress, Protocol: "tcp", Port: 8000},
		Percent:     5,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Target(), f.Params().Direction)
	// Output:
	// netns app dev veth0 ingress
}
