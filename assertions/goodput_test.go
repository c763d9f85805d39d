package assertions_test

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

func TestParseGoodput(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in       string
		want     assertions.GoodputSLO
		wantText string
	}{
		{"ttft:500ms,tpot:50ms", assertions.GoodputSLO{TTFT: 500 * ms, TPOT: 50 * ms}, "ttft:500ms,tpot:50ms"},
		{"ttft:500 tpot:50 e2el:10000", assertions.GoodputSLO{TTFT: 500 * ms, TPOT: 50 * ms, E2E: 10 * time.Second}, "ttft:500ms,tpot:50ms,e2e:10000ms"},
		{" e2e : 1.5s , ttft:2s ", assertions.GoodputSLO{TTFT: 2 * time.Second, E2E: 1500 * ms}, "ttft:2000ms,e2e:1500ms"},
		{"tpot:250us", assertions.GoodputSLO{TPOT: 250 * time.Microsecond}, "tpot:0.25ms"},
		{"tpot:0.000001", assertions.GoodputSLO{TPOT: time.Nanosecond}, "tpot:0.000001ms"},
		{"tpot:1µs", assertions.GoodputSLO{TPOT: time.Microsecond}, "tpot:0.001ms"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := assertions.ParseGoodput(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.wantText {
				t.Errorf("String: got %q, want %q", s, tt.wantText)
			}
			if again, err := assertions.ParseGoodput(got.String()); err != nil || again != got {
				t.Errorf("String %q reparses to %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseGoodputInvalid(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "expected objectives such as ttft:500ms,tpot:50ms"},
		{"foo:5", 0, `unknown objective "foo" (want ttft, tpot or e2e)`},
		{"ttft:500ms,ttft:1s", 11, "objective ttft given twice"},
		{"e2e:1s e2el:2s", 7, "objective e2e given twice"},
		{"ttft:0", 5, "ttft objective must be positive (at least 1ns)"},
		{"ttft:0.0000001", 5, "ttft objective must be positive (at least 1ns)"},
		{"ttft:5m", 6, `unit "m" is not accepted (minutes or milli?): write 60s for a minute, 1ms for a millisecond`},
		{"ttft:5xs", 6, `unknown unit "xs" (want ms, s or us)`},
		{"ttft:5%", 6, "ttft is a latency: write it in ms, s or us, not %"},
		{"ttft:99999999999999s", 5, "ttft objective 99999999999999s too large"},
		{"ttft", 4, `expected ":" after ttft, then a latency such as 500ms`},
		{"ttft:abc", 5, "expected a number"},
		{"ttft:-5", 5, "expected a number without a sign"},
		{"ttft:500ms,", 11, `expected an objective after ","`},
		{",ttft:5", 0, "expected an objective name (ttft, tpot or e2e)"},
		{"ttft:500ms;tpot:5", 10, `unexpected ';' after the objective (separate objectives with ",")`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := assertions.ParseGoodput(tt.in)
			pes := assertions.ParseErrors(err)
			if len(pes) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(pes), err)
			}
			if pe := pes[0]; pe.Offset != tt.offset || pe.Msg != tt.msg || pe.What != "goodput" || pe.Input != tt.in {
				t.Errorf("got %s at %d %q, want at %d %q", pe.What, pe.Offset, pe.Msg, tt.offset, tt.msg)
			}
		})
	}
	_, err := assertions.ParseGoodput("foo:1, tpot:2xs")
	if n := len(assertions.ParseErrors(err)); n != 2 {
		t.Errorf("got %d problems, want 2 (all reported): %v", n, err)
	}
}

func TestGoodputMet(t *testing.T) {
	ms := time.Millisecond
	slo := assertions.GoodputSLO{TTFT: 500 * ms, TPOT: 50 * ms, E2E: 10 * time.Second}
	good := assertions.RequestLatency{Succeeded: true, TTFT: 400 * ms, HasTTFT: true, TPOT: 40 * ms, HasTPOT: true, E2E: 5 * time.Second}
	tests := []struct {
		name string
		slo  assertions.GoodputSLO
		edit func(*assertions.RequestLatency)
		want bool
	}{
		{"meets all", slo, func(*assertions.RequestLatency) {}, true},
		{"equal to the objective meets it", slo, func(l *assertions.RequestLatency) { l.TTFT, l.TPOT, l.E2E = 500*ms, 50*ms, 10*time.Second }, true},
		{"failed request", slo, func(l *assertions.RequestLatency) { l.Succeeded = false }, false},
		{"slow first token", slo, func(l *assertions.RequestLatency) { l.TTFT = 501 * ms }, false},
		{"slow decode", slo, func(l *assertions.RequestLatency) { l.TPOT = 51 * ms }, false},
		{"slow end", slo, func(l *assertions.RequestLatency) { l.E2E = 11 * time.Second }, false},
		{"no first token fails a ttft objective", slo, func(l *assertions.RequestLatency) { l.HasTTFT, l.TTFT = false, 0 }, false},
		{"one output token meets a tpot objective", slo, func(l *assertions.RequestLatency) { l.HasTPOT, l.TPOT = false, 0 }, true},
		{"unset objective ignored", assertions.GoodputSLO{TTFT: 500 * ms}, func(l *assertions.RequestLatency) { l.E2E = time.Hour }, true},
		{"no objectives: any success", assertions.GoodputSLO{}, func(l *assertions.RequestLatency) { l.HasTTFT = false }, true},
		{"no objectives: failure", assertions.GoodputSLO{}, func(l *assertions.RequestLatency) { l.Succeeded = false }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := good
			tt.edit(&l)
			if got := tt.slo.Met(l); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if !(assertions.GoodputSLO{}).IsZero() || slo.IsZero() {
		t.Error("IsZero wrong")
	}
}
