package assertions_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

func TestLive(t *testing.T) {
	ths, err := assertions.ParseConfig(map[string]any{
		"ttft":       []any{map[string]any{"threshold": "p(99)<500ms", "abortOnFail": true, "delayAbortEval": "5s"}},
		"error_rate": []any{map[string]any{"threshold": "rate<0.1", "abortOnFail": true}},
		"e2e":        []any{"max<1"}, // fails on every window below, but may not abort
	})
	if err != nil {
		t.Fatal(err)
	}
	live, err := assertions.NewLive(ths)
	if err != nil {
		t.Fatal(err)
	}
	if !live.Enabled() || live.Window() != assertions.DefaultLiveWindow || assertions.DefaultLiveWindow != 10*time.Second {
		t.Fatalf("Enabled %v Window %v, want true and 10s", live.Enabled(), live.Window())
	}

	// window builds a rolling-window view holding one ttft sample, one e2e
	// sample and errors out of 10 finished requests.
	window := func(ttft float64, errors int64) *fakeSource {
		return &fakeSource{
			samples: []fakeSample{{"ttft", assertions.Tags{}, ttft}, {"e2e", assertions.Tags{}, 2}},
			events:  []fakeEvent{{"error_rate", assertions.Tags{}, errors, 10}},
		}
	}
	tests := []struct {
		name    string
		elapsed time.Duration
		src     assertions.Source
		want    []string // thresholds that must abort now
	}{
		{"slow ttft before its delay", 3 * time.Second, window(600, 0), nil},
		{"slow ttft just before its delay", 5*time.Second - 1, window(600, 0), nil},
		{"slow ttft at its delay", 5 * time.Second, window(600, 0), []string{"ttft: p(99)<500ms"}},
		{"healthy window", 60 * time.Second, window(100, 0), nil},
		{"errors abort at once", time.Second, window(100, 5), []string{"error_rate: rate<0.1"}},
		{"both fail", 6 * time.Second, window(600, 5), []string{"error_rate: rate<0.1", "ttft: p(99)<500ms"}},
		{"empty window does not abort", 60 * time.Second, &fakeSource{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range live.Check(tt.elapsed, tt.src) {
				if o.OK || o.NoData || !o.Threshold.AbortOnFail {
					t.Errorf("reported an outcome that may not abort: %+v", o)
				}
				got = append(got, o.Threshold.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLiveOptions(t *testing.T) {
	l, err := assertions.NewLive(nil, assertions.WithWindow(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l.Window() != 30*time.Second || l.Enabled() {
		t.Errorf("got window %v enabled %v, want 30s false", l.Window(), l.Enabled())
	}
	if got := l.Check(time.Hour, &fakeSource{}); len(got) != 0 {
		t.Errorf("no thresholds: got %v", got)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := assertions.NewLive(nil, assertions.WithWindow(d)); err == nil {
			t.Errorf("window %v: want an error", d)
		}
	}
}
