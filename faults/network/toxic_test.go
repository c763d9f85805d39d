package network

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

func TestProxyParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    ProxyParams
		want []string // every problem, reported at once
	}{
		{"latency ok", &LatencyParams{Latency: time.Millisecond}, nil},
		{"latency all wrong", &LatencyParams{Stream: "sideways", Latency: -1, Jitter: -1}, []string{"stream", "latency", "jitter"}},
		{"throttle", &ThrottleParams{Rate: 0}, []string{"rate"}},
		{"slow close", &SlowCloseParams{}, []string{"delay"}},
		{"reset ok at once", &ResetPeerParams{}, nil},
		{"reset negative", &ResetPeerParams{Timeout: -time.Second}, []string{"timeout"}},
		{"blackhole ok", &BlackholeParams{Stream: Upstream}, nil},
		{"limit negative", &LimitDataParams{Bytes: -1}, []string{"bytes"}},
		{"error ok", &HTTPErrorParams{RequestMatch: RequestMatch{Probability: 0.2}, Status: 429}, nil},
		{"error all wrong", &HTTPErrorParams{RequestMatch: RequestMatch{Probability: 1.5, Path: "v1"}, Status: 200}, []string{"probability", "path", "status"}},
		{"ttfb", &TTFBParams{}, []string{"delay"}},
		{"stall", &StallParams{AfterTokens: -1}, []string{"after_tokens", "stall"}},
		{"cut ok", &CutParams{AfterTokens: 5}, nil},
		{"chunk delay", &ChunkDelayParams{RequestMatch: RequestMatch{Probability: -0.1}}, []string{"probability", "delay"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.withDefaults().Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want problems with %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to name %s", err, w)
				}
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tt.want) {
				t.Errorf("got %d problems (%q), want %d", got, err, len(tt.want))
			}
		})
	}
}

func TestProxyParamsDefaults(t *testing.T) {
	p := (&HTTPErrorParams{}).withDefaults().(*HTTPErrorParams)
	if p.Status != 503 || p.Probability != 1 {
		t.Errorf("http.error defaults: status %d probability %v, want 503 and 1", p.Status, p.Probability)
	}
	raw := &LatencyParams{Latency: time.Second}
	if raw.Stream != "" {
		t.Fatal("defaults must not change the original")
	}
	if got := raw.withDefaults().(*LatencyParams).Stream; got != Downstream {
		t.Errorf("latency stream default: got %q, want downstream", got)
	}
	if raw.Validate() == nil {
		t.Error("Validate filled a default: a params without defaults applied must fail on its empty stream")
	}
}

func TestNewProxyParamsDecodes(t *testing.T) {
	for _, typ := range ProxyFaultTypes() {
		p, err := NewProxyParams(typ)
		if err != nil {
			t.Fatal(err)
		}
		if p.Type() != typ {
			t.Errorf("NewProxyParams(%q).Type() = %q", typ, p.Type())
		}
	}
	if _, err := NewProxyParams("network.nope"); err == nil || !strings.Contains(err.Error(), TypeStreamStall) {
		t.Errorf("unknown type: got %v, want an error listing the known types", err)
	}
	// The JSON shape an experiment's params: decode into (YAML uses the same names).
	p, _ := NewProxyParams(TypeStreamStall)
	if err := json.Unmarshal([]byte(`{"probability":0.2,"after_tokens":5,"stall":2000000000,"path":"/v1/chat/completions"}`), p); err != nil {
		t.Fatal(err)
	}
	s := p.(*StallParams)
	if s.Probability != 0.2 || s.AfterTokens != 5 || s.Stall != 2*time.Second || s.Path != "/v1/chat/completions" {
		t.Errorf("decoded %+v", s)
	}
}

func TestToxicSpecStrict(t *testing.T) {
	tests := []struct {
		name string
		spec ToxicSpec
		want string
	}{
		{"unknown field", ToxicSpec{Name: "a", Type: TypeProxyLatency, Params: json.RawMessage(`{"latency":1,"latnecy":2}`)}, "latnecy"},
		{"bad name", ToxicSpec{Name: "a b", Type: TypeProxyLatency, Params: json.RawMessage(`{"latency":1}`)}, "name"},
		{"unknown type", ToxicSpec{Name: "a", Type: "x"}, "unknown proxy fault type"},
		{"invalid params", ToxicSpec{Name: "a", Type: TypeProxyThrottle, Params: json.RawMessage(`{}`)}, "rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.spec.parse()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %s", err, tt.want)
			}
		})
	}
}

// recordLog is a RevertLog that keeps the specs, or fails.
type recordLog struct {
	specs []faults.RevertSpec
	err   error
}

func (l *recordLog) Will(s faults.RevertSpec) error {
	if l.err != nil {
		return l.err
	}
	l.specs = append(l.specs, s)
	return nil
}

func TestToxicFaultJournalsBeforeAdding(t *testing.T) {
	srv := startTCPServer(t, echo)
	p := startProxy(t, srv.addr(), ModeTCP)
	f, err := NewToxic("lat", p, &LatencyParams{Latency: time.Millisecond}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// A journal that cannot record means no change at all.
	if _, err := f.Inject(context.Background(), &recordLog{err: errors.New("disk full")}); err == nil {
		t.Fatal("Inject with a failing journal: got nil, want error")
	}
	if len(p.Toxics()) != 0 {
		t.Fatal("toxic added although its revert spec was not recorded")
	}
	log := &recordLog{}
	undo, err := f.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.specs) != 1 || log.specs[0].Kind != KindProxyToxic {
		t.Fatalf("specs: %+v, want one %s", log.specs, KindProxyToxic)
	}
	if got := p.Toxics(); len(got) != 1 || got[0].Name != "lat" || got[0].Seed != 3 {
		t.Errorf("toxics: %+v", got)
	}
	// A second toxic with the same name is refused.
	if _, err := f.Inject(context.Background(), log); !errors.Is(err, ErrToxicExists) {
		t.Errorf("same name twice: got %v, want ErrToxicExists", err)
	}
	// The in-process spec has no control socket: its reverter has nothing to do.
	if err := ProxyReverters()[KindProxyToxic](context.Background(), log.specs[0].Data); err != nil {
		t.Errorf("RevertToxic of an in-process proxy: %v", err)
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(p.Toxics()) != 0 {
		t.Error("toxic still there after undo")
	}
}
