package assertions_test

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestParseGoodput(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in       string
		want     recording.SLO
		wantText string
	}{
		{"ttft:500ms,tpot:50ms", recording.SLO{TTFT: 500 * ms, TPOT: 50 * ms}, "ttft:500ms,tpot:50ms"},
		{"ttft:500 tpot:50 e2el:10000", recording.SLO{TTFT: 500 * ms, TPOT: 50 * ms, E2E: 10 * time.Second}, "ttft:500ms,tpot:50ms,e2e:10000ms"},
		{" e2e : 1.5s , ttft:2s ", recording.SLO{TTFT: 2 * time.Second, E2E: 1500 * ms}, "ttft:2000ms,e2e:1500ms"},
		{"tpot:250us", recording.SLO{TPOT: 250 * time.Microsecond}, "tpot:0.25ms"},
		{"tpot:0.000001", recording.SLO{TPOT: time.Nanosecond}, "tpot:0.000001ms"},
		{"tpot:1µs", recording.SLO{TPOT: time.Microsecond}, "tpot:0.001ms"},
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
			if s := assertions.FormatGoodput(got); s != tt.wantText {
				t.Errorf("FormatGoodput: got %q, want %q", s, tt.wantText)
			}
			if again, err := assertions.ParseGoodput(assertions.FormatGoodput(got)); err != nil || again != got {
				t.Errorf("FormatGoodput %q reparses to %+v, %v", assertions.FormatGoodput(got), again, err)
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

// TestGoodputMet checks that the objectives ParseGoodput returns are judged
// by the recorder's rule (recording.SLO.Met, the one definition of goodput) the
// way vLLM's --goodput judges them, on real Results.
func TestGoodputMet(t *testing.T) {
	ms := time.Millisecond
	slo, err := assertions.ParseGoodput("ttft:500ms,tpot:50ms,e2e:10s")
	if err != nil {
		t.Fatal(err)
	}
	// good: sent at 1 s, first token after 400 ms, 101 output tokens in
	// 4.4 s more (tpot 44 ms), e2e 4.8 s.
	good := recording.Result{
		Scheduled: time.Second, Dequeued: time.Second, Sent: time.Second,
		FirstToken: time.Second + 400*ms, End: time.Second + 4800*ms,
		Outcome: recording.OutcomeOK, HTTPStatus: 200, OutputTokens: 101, ContentChunks: 101, UsageReported: true,
	}
	tests := []struct {
		name string
		slo  recording.SLO
		edit func(*recording.Result)
		want bool
	}{
		{"meets all", slo, func(*recording.Result) {}, true},
		{"equal to the objectives meets them", slo, func(r *recording.Result) {
			r.FirstToken, r.End = time.Second+500*ms, time.Second+5500*ms // ttft 500 ms, tpot 5 s/100 = 50 ms, e2e 5.5 s
		}, true},
		{"failed request", slo, func(r *recording.Result) { r.Outcome, r.Class = recording.OutcomeFailed, recording.ClassHTTP5xx }, false},
		{"cancelled request", slo, func(r *recording.Result) { r.Outcome, r.Class = recording.OutcomeCancelled, recording.ClassCancelled }, false},
		{"slow first token", slo, func(r *recording.Result) { r.FirstToken = time.Second + 501*ms }, false},
		{"slow decode", slo, func(r *recording.Result) { r.End = time.Second + 5600*ms }, false},
		{"slow end", mustGoodput(t, "e2e:10s"), func(r *recording.Result) { r.End = 12 * time.Second }, false},
		{"no first token fails a ttft objective", slo, func(r *recording.Result) { r.FirstToken = 0 }, false},
		{"one output token meets a tpot objective", mustGoodput(t, "tpot:1ms"), func(r *recording.Result) {
			r.OutputTokens, r.ContentChunks = 1, 1
		}, true},
		{"unset objective ignored", mustGoodput(t, "ttft:500ms"), func(r *recording.Result) { r.End = time.Hour }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			tt.edit(&r)
			if got := tt.slo.Met(&r); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if (recording.SLO{}).Given() || !slo.Given() {
		t.Error("Given wrong")
	}
}

func mustGoodput(t *testing.T, s string) recording.SLO {
	t.Helper()
	slo, err := assertions.ParseGoodput(s)
	if err != nil {
		t.Fatal(err)
	}
	return slo
}
