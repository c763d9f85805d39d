package network

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/llmchaos/llmchaos/faults"
)

// nsSpecLog is a faults.RevertLog that keeps the specs it was given; onWill,
// when set, runs first and may refuse the record.
type nsSpecLog struct {
	mu     sync.Mutex
	specs  []faults.RevertSpec
	onWill func(faults.RevertSpec) error
}

var _ faults.RevertLog = (*nsSpecLog)(nil)

// Will implements faults.RevertLog.
func (l *nsSpecLog) Will(s faults.RevertSpec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.onWill != nil {
		if err := l.onWill(s); err != nil {
			return err
		}
	}
	l.specs = append(l.specs, s)
	return nil
}

// only returns the one spec logged, failing t otherwise.
func (l *nsSpecLog) only(t *testing.T) faults.RevertSpec {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.specs) != 1 {
		t.Fatalf("logged %d revert specs, want 1: %+v", len(l.specs), l.specs)
	}
	return l.specs[0]
}

// nsWantProblems checks that err mentions each of want (and is nil when want
// is empty).
func nsWantProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want problems %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestNetnsTargetValidate(t *testing.T) {
	tests := []struct {
		name string
		in   NetnsTarget
		want []string
	}{
		{"name", NetnsTarget{Netns: "app", Interface: "eth0"}, nil},
		{"path", NetnsTarget{Netns: "/proc/42/ns/net"}, nil},
		{"root allowed", NetnsTarget{AllowRootNamespace: true}, nil},
		{"root by default", NetnsTarget{}, []string{"netns: required", "allow_root_namespace"}},
		{"root flag with netns", NetnsTarget{Netns: "app", AllowRootNamespace: true}, []string{"allow_root_namespace: only"}},
		{"unclean path", NetnsTarget{Netns: "/var/run/netns/../x"}, []string{"not clean"}},
		{"relative path", NetnsTarget{Netns: "run/x"}, []string{"neither a namespace name"}},
		{"dotdot", NetnsTarget{Netns: ".."}, []string{"neither a namespace name"}},
		{"long interface", NetnsTarget{Netns: "app", Interface: "abcdefghijklmnop"}, []string{"longer than 15"}},
		{"bad interface", NetnsTarget{Netns: "app", Interface: "eth 0"}, []string{"character Linux does not allow"}},
		{"all at once", NetnsTarget{Netns: "a/b", Interface: "x:y"}, []string{"netns:", "interface:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { nsWantProblems(t, tt.in.Validate(), tt.want...) })
	}
}

func TestNetnsTargetPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"app", "/var/run/netns/app"},
		{"/proc/1/ns/net", "/proc/1/ns/net"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := (NetnsTarget{Netns: tt.in}).nsPath(); got != tt.want {
			t.Errorf("nsPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLossParams(t *testing.T) {
	base := NetnsTarget{Netns: "app"}
	tests := []struct {
		name string
		in   NetnsLossParams
		want []string
	}{
		{"minimal", NetnsLossParams{NetnsTarget: base, Percent: 20}, nil},
		{"full", NetnsLossParams{NetnsTarget: base, Percent: 0.5, PacketMatch: PacketMatch{
			Direction: PacketIngress, Protocol: "tcp", Port: 8000, Peer: "192.0.2.0/24"}}, nil},
		{"v6 peer", NetnsLossParams{NetnsTarget: base, Percent: 100, PacketMatch: PacketMatch{Peer: "fd00::1"}}, nil},
		{"zero percent", NetnsLossParams{NetnsTarget: base}, []string{"percent: must be in (0, 100]"}},
		{"over 100", NetnsLossParams{NetnsTarget: base, Percent: 101}, []string{"percent: must be in (0, 100]"}},
		{"below resolution", NetnsLossParams{NetnsTarget: base, Percent: 0.001}, []string{"rounds to 0"}},
		{"port without protocol", NetnsLossParams{NetnsTarget: base, Percent: 1, PacketMatch: PacketMatch{Port: 80}}, []string{"port: needs protocol"}},
		{"bad port", NetnsLossParams{NetnsTarget: base, Percent: 1, PacketMatch: PacketMatch{Protocol: "udp", Port: 70000}}, []string{"port: 70000"}},
		{"bad protocol", NetnsLossParams{NetnsTarget: base, Percent: 1, PacketMatch: PacketMatch{Protocol: "sctp"}}, []string{"protocol: \"sctp\""}},
		{"bad direction", NetnsLossParams{NetnsTarget: base, Percent: 1, PacketMatch: PacketMatch{Direction: "up"}}, []string{"direction: \"up\""}},
		{"bad peer", NetnsLossParams{NetnsTarget: base, Percent: 1, PacketMatch: PacketMatch{Peer: "192.0.2.300"}}, []string{"peer:"}},
		{"everything wrong", NetnsLossParams{Percent: -1, PacketMatch: PacketMatch{Direction: "x", Protocol: "x", Peer: "x"}},
			[]string{"netns:", "percent:", "direction:", "protocol:", "peer:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { nsWantProblems(t, tt.in.WithDefaults().Validate(), tt.want...) })
	}
}

func TestLossDefaultsApartFromValidate(t *testing.T) {
	p := NetnsLossParams{NetnsTarget: NetnsTarget{Netns: "app"}, Percent: 20}
	if err := p.Validate(); err == nil {
		t.Fatal("Validate accepted an empty direction: it must not fill defaults itself")
	}
	if got, want := p.WithDefaults().Direction, PacketBoth; got != want {
		t.Fatalf("default direction = %q, want %q", got, want)
	}
	l, err := NewNetnsLoss("drop", p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Params().Direction, PacketBoth; got != want {
		t.Fatalf("NewNetnsLoss direction = %q, want %q", got, want)
	}
	if _, err := NewNetnsLoss("bad", NetnsLossParams{Percent: 20}); err == nil || !strings.Contains(err.Error(), `network.loss "bad"`) {
		t.Fatalf("NewNetnsLoss without netns: got %v, want an error naming the fault", err)
	}
}

func TestPartitionParams(t *testing.T) {
	nsWantProblems(t, NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: "app"}}.WithDefaults().Validate())
	nsWantProblems(t, NetnsPartitionParams{PacketMatch: PacketMatch{Peer: "nope"}}.WithDefaults().Validate(), "netns:", "peer:")
	own := NetnsTarget{AllowRootNamespace: true}
	nsWantProblems(t, NetnsPartitionParams{NetnsTarget: own}.WithDefaults().Validate(), "name an interface or a peer")
	nsWantProblems(t, NetnsLossParams{NetnsTarget: own, Percent: 5}.WithDefaults().Validate(), "name an interface or a peer")
	nsWantProblems(t, NetnsPartitionParams{NetnsTarget: own, PacketMatch: PacketMatch{Peer: "192.0.2.9"}}.WithDefaults().Validate())
	own.Interface = "eth0"
	nsWantProblems(t, NetnsLossParams{NetnsTarget: own, Percent: 5}.WithDefaults().Validate())
	if _, err := NewNetnsPartition("cut", NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: "app"}}); err != nil {
		t.Fatal(err)
	}
}

func TestParsePeer(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"192.0.2.7/24", "192.0.2.0/24"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"fd00::1", "fd00::1/128"},
		{"fd00::1/64", "fd00::/64"},
	}
	for _, tt := range tests {
		got, err := parsePeer(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("parsePeer(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "x", "192.0.2.1/33", "fe80::1%eth0"} {
		if _, err := parsePeer(bad); err == nil {
			t.Errorf("parsePeer(%q) accepted", bad)
		}
	}
}

func TestBitRate(t *testing.T) {
	tests := []struct {
		in   string
		want BitRate
		str  string
	}{
		{"1mbit", Mbit, "1mbit"},
		{"1Mbit", Mbit, "1mbit"},
		{"512kbit", 512 * Kbit, "512kbit"},
		{"2gbit", 2 * Gbit, "2gbit"},
		{"1.5mbit", 1500 * Kbit, "1500kbit"},
		{"100bit", 100, "100bit"},
		{"2000000", 2 * Mbit, "2mbit"},
		{" 3 mbit ", 3 * Mbit, "3mbit"},
	}
	for _, tt := range tests {
		got, err := ParseBitRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBitRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.str {
			t.Errorf("BitRate(%d).String() = %q, want %q", got, s, tt.str)
		}
	}
	for _, bad := range []string{"", "fast", "-1mbit", "1mbps", "10kbps", "NaN", "1e30gbit"} {
		if r, err := ParseBitRate(bad); err == nil {
			t.Errorf("ParseBitRate(%q) = %d, want an error", bad, r)
		}
	}
	var p struct{ Rate BitRate }
	if err := json.Unmarshal([]byte(`{"Rate":"4mbit"}`), &p); err != nil || p.Rate != 4*Mbit {
		t.Errorf("JSON string: got %d, %v", p.Rate, err)
	}
	if err := json.Unmarshal([]byte(`{"Rate":64000}`), &p); err != nil || p.Rate != 64*Kbit {
		t.Errorf("JSON number: got %d, %v", p.Rate, err)
	}
	if err := json.Unmarshal([]byte(`{"Rate":"1mbps"}`), &p); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("JSON bps: got %v, want the bytes warning", err)
	}
}

func TestBandwidthParams(t *testing.T) {
	base := NetnsTarget{Netns: "app", Interface: "veth0"}
	tests := []struct {
		name string
		in   NetnsBandwidthParams
		want []string
	}{
		{"minimal", NetnsBandwidthParams{NetnsTarget: base, Rate: Mbit}, nil},
		{"limit instead of latency", NetnsBandwidthParams{NetnsTarget: base, Rate: Mbit, LimitBytes: 100000}, nil},
		{"no interface", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: "app"}, Rate: Mbit}, []string{"interface: required"}},
		{"no rate", NetnsBandwidthParams{NetnsTarget: base}, []string{"rate: must be at least 8bit"}},
		{"both limits", NetnsBandwidthParams{NetnsTarget: base, Rate: Mbit, Latency: time.Second, LimitBytes: 100000},
			[]string{"set one of them, not both"}},
		{"limit below burst", NetnsBandwidthParams{NetnsTarget: base, Rate: Mbit, BurstBytes: 9000, LimitBytes: 5000}, []string{"below burst_bytes"}},
		{"negative latency", NetnsBandwidthParams{NetnsTarget: base, Rate: Mbit, Latency: -time.Second}, []string{"latency: must be positive"}},
		{"huge burst", NetnsBandwidthParams{NetnsTarget: base, Rate: 8, BurstBytes: 1 << 20}, []string{"over 1m0s"}},
		{"all at once", NetnsBandwidthParams{BurstBytes: -1, Latency: -1}, []string{"netns:", "interface:", "rate:", "burst_bytes:", "latency:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { nsWantProblems(t, tt.in.WithDefaults().Validate(), tt.want...) })
	}
}

func TestBandwidthDefaults(t *testing.T) {
	tests := []struct {
		rate       BitRate
		wantBurst  int
		wantLimitB uint32
	}{
		// 1mbit = 125000 B/s: 10 ms is 1250 B, so the 4096 floor; limit 50 ms = 6250 + burst.
		{Mbit, 4096, 6250 + 4096},
		// 1gbit = 125 MB/s: 10 ms is 1.25 MB.
		{Gbit, 1250000, 6250000 + 1250000},
	}
	for _, tt := range tests {
		p := NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: "x", Interface: "y"}, Rate: tt.rate}.WithDefaults()
		if p.BurstBytes != tt.wantBurst || p.Latency != defaultTBFLatency || p.limitBytes() != tt.wantLimitB {
			t.Errorf("rate %s: burst %d latency %s limit %d; want %d %s %d",
				tt.rate, p.BurstBytes, p.Latency, p.limitBytes(), tt.wantBurst, defaultTBFLatency, tt.wantLimitB)
		}
	}
}

func TestDelayParams(t *testing.T) {
	base := NetnsTarget{Netns: "app", Interface: "veth0"}
	tests := []struct {
		name string
		in   NetnsDelayParams
		want []string
	}{
		{"ok", NetnsDelayParams{NetnsTarget: base, Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond}, nil},
		{"no delay", NetnsDelayParams{NetnsTarget: base}, []string{"delay: must be in"}},
		{"jitter over delay", NetnsDelayParams{NetnsTarget: base, Delay: time.Millisecond, Jitter: time.Second}, []string{"jitter:"}},
		{"no interface", NetnsDelayParams{NetnsTarget: NetnsTarget{Netns: "app"}, Delay: time.Millisecond}, []string{"interface: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { nsWantProblems(t, tt.in.WithDefaults().Validate(), tt.want...) })
	}
	if got := (NetnsDelayParams{}).WithDefaults().LimitPackets; got != defaultNetemLimit {
		t.Errorf("default limit_packets = %d, want %d", got, defaultNetemLimit)
	}
}

func TestTableNames(t *testing.T) {
	a, err := newTableName("slow net/1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newTableName("slow net/1")
	if !strings.HasPrefix(a, "llmchaos_slow_net_1_") || len(a) != len("llmchaos_slow_net_1_")+8 {
		t.Errorf("table name %q, want llmchaos_slow_net_1_<8 hex>", a)
	}
	if a == b {
		t.Errorf("two injections got the same table name %q", a)
	}
	if got := tableNamePart("", 32); got != "fault" {
		t.Errorf("tableNamePart(\"\") = %q, want fault", got)
	}
	if got := tableNamePart(strings.Repeat("x", 100), 32); len(got) != 32 {
		t.Errorf("tableNamePart kept %d bytes, want 32", len(got))
	}
}

func TestOnceUndo(t *testing.T) {
	calls := 0
	fail := true
	undo := kernelUndo(func(context.Context) error {
		calls++
		if fail {
			return errors.New("busy")
		}
		return nil
	})
	ctx := context.Background()
	if err := undo(ctx); err == nil {
		t.Fatal("first undo: want the revert's error")
	}
	fail = false
	for i := 0; i < 3; i++ {
		if err := undo(ctx); err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
	}
	if calls != 2 {
		t.Fatalf("revert ran %d times, want 2 (one failure, one success, then no-ops)", calls)
	}
}

// TestParamsDecode decodes the params blocks an experiment file carries
// (the examples in the params' doc comments), strictly, as the runner does.
func TestParamsDecode(t *testing.T) {
	tests := []struct {
		name, src string
		into      any
		want      any
	}{
		{"loss", `{netns: app, interface: veth0, percent: 20, direction: ingress, protocol: udp, port: 8000}`,
			&NetnsLossParams{}, &NetnsLossParams{NetnsTarget: NetnsTarget{Netns: "app", Interface: "veth0"},
				PacketMatch: PacketMatch{Direction: PacketIngress, Protocol: "udp", Port: 8000}, Percent: 20}},
		{"partition", `{netns: app, peer: 192.0.2.1}`,
			&NetnsPartitionParams{}, &NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: "app"}, PacketMatch: PacketMatch{Peer: "192.0.2.1"}}},
		{"bandwidth", `{netns: app, interface: veth0, rate: 1mbit, latency: 20ms, burst_bytes: 9000}`,
			&NetnsBandwidthParams{}, &NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: "app", Interface: "veth0"},
				Rate: Mbit, Latency: 20 * time.Millisecond, BurstBytes: 9000}},
		{"delay", `{netns: app, interface: veth0, delay: 100ms, jitter: 20ms}`,
			&NetnsDelayParams{}, &NetnsDelayParams{NetnsTarget: NetnsTarget{Netns: "app", Interface: "veth0"},
				Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond}},
		{"own namespace", `{allow_root_namespace: true, interface: eth0, percent: 1}`,
			&NetnsLossParams{}, &NetnsLossParams{NetnsTarget: NetnsTarget{AllowRootNamespace: true, Interface: "eth0"}, Percent: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := yaml.UnmarshalWithOptions([]byte(tt.src), tt.into, yaml.DisallowUnknownField()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.into, tt.want) {
				t.Fatalf("got %+v, want %+v", tt.into, tt.want)
			}
		})
	}
	var p NetnsLossParams
	if err := yaml.UnmarshalWithOptions([]byte(`{netns: app, percnt: 20}`), &p, yaml.DisallowUnknownField()); err == nil {
		t.Error("a misspelt key was accepted")
	}
	if err := yaml.UnmarshalWithOptions([]byte(`{netns: app, interface: x, rate: 1mbps}`), &NetnsBandwidthParams{}); err == nil ||
		!strings.Contains(err.Error(), "bytes") {
		t.Errorf("rate in bps: got %v, want the bytes warning", err)
	}
}
