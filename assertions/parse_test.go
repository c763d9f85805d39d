package assertions_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/assertions"
)

// th builds a threshold without tags for table tests.
func th(metric string, agg assertions.Agg, p float64, op assertions.Op, num float64, unit assertions.Unit) assertions.Threshold {
	return assertions.Threshold{Metric: metric, Expr: assertions.Expr{Agg: agg, P: p, Op: op, Num: num, Unit: unit}}
}

func withTags(t assertions.Threshold, tags assertions.Tags) assertions.Threshold {
	t.Tags = tags
	return t
}

func TestParseValid(t *testing.T) {
	const (
		avg   = assertions.AggAvg
		minA  = assertions.AggMin
		maxA  = assertions.AggMax
		med   = assertions.AggMed
		pct   = assertions.AggPercentile
		count = assertions.AggCount
		rate  = assertions.AggRate
		value = assertions.AggValue
	)
	tests := []struct {
		name      string
		in        string
		want      []assertions.Threshold
		wantBound []float64 // in the metric's unit, one per threshold
	}{
		{"k6 basic", "ttft: p(99)<500ms",
			[]assertions.Threshold{th("ttft", pct, 99, assertions.OpLT, 500, assertions.UnitMilli)}, []float64{500}},
		{"plain number is ms", "itl: avg<50",
			[]assertions.Threshold{th("itl", avg, 0, assertions.OpLT, 50, assertions.UnitNone)}, []float64{50}},
		{"whitespace everywhere", "  ttft { phase : baseline , class:chat } :  p( 99.9 ) <= 0.5 s  ",
			[]assertions.Threshold{withTags(th("ttft", pct, 99.9, assertions.OpLE, 0.5, assertions.UnitSecond),
				assertions.Tags{Phase: "baseline", Class: "chat"})}, []float64{500}},
		{"several expressions", "ttft{phase:baseline}: p(99)<500ms, p(50)<200ms,med<=0.2s",
			[]assertions.Threshold{
				withTags(th("ttft", pct, 99, assertions.OpLT, 500, assertions.UnitMilli), assertions.Tags{Phase: "baseline"}),
				withTags(th("ttft", pct, 50, assertions.OpLT, 200, assertions.UnitMilli), assertions.Tags{Phase: "baseline"}),
				withTags(th("ttft", med, 0, assertions.OpLE, 0.2, assertions.UnitSecond), assertions.Tags{Phase: "baseline"}),
			}, []float64{500, 200, 200}},
		{"rate fraction", "error_rate: rate<0.01",
			[]assertions.Threshold{th("error_rate", rate, 0, assertions.OpLT, 0.01, assertions.UnitNone)}, []float64{0.01}},
		{"rate percent", "throttle_rate: rate<=5%",
			[]assertions.Threshold{th("throttle_rate", rate, 0, assertions.OpLE, 5, assertions.UnitPercent)}, []float64{0.05}},
		{"seconds", "e2e: max<30s",
			[]assertions.Threshold{th("e2e", maxA, 0, assertions.OpLT, 30, assertions.UnitSecond)}, []float64{30000}},
		{"microseconds us", "tpot: min>=800us",
			[]assertions.Threshold{th("tpot", minA, 0, assertions.OpGE, 800, assertions.UnitMicro)}, []float64{0.8}},
		{"microseconds micro sign", "tpot: min>=800\u00b5s",
			[]assertions.Threshold{th("tpot", minA, 0, assertions.OpGE, 800, assertions.UnitMicro)}, []float64{0.8}},
		{"microseconds greek mu", "tpot: min>=800\u03bcs",
			[]assertions.Threshold{th("tpot", minA, 0, assertions.OpGE, 800, assertions.UnitMicro)}, []float64{0.8}},
		{"counter count", "requests_lost: count==0",
			[]assertions.Threshold{th("requests_lost", count, 0, assertions.OpEQ, 0, assertions.UnitNone)}, []float64{0}},
		{"k6 triple equals", "requests_lost: count===0",
			[]assertions.Threshold{th("requests_lost", count, 0, assertions.OpEQ, 0, assertions.UnitNone)}, []float64{0}},
		{"counter rate per second", "requests: rate>10",
			[]assertions.Threshold{th("requests", rate, 0, assertions.OpGT, 10, assertions.UnitNone)}, []float64{10}},
		{"value", "goodput: value>=5.5",
			[]assertions.Threshold{th("goodput", value, 0, assertions.OpGE, 5.5, assertions.UnitNone)}, []float64{5.5}},
		{"token distribution", "output_tokens: p(50)>100",
			[]assertions.Threshold{th("output_tokens", pct, 50, assertions.OpGT, 100, assertions.UnitNone)}, []float64{100}},
		{"count on a duration", "ttft{phase:fault}: count>0",
			[]assertions.Threshold{withTags(th("ttft", count, 0, assertions.OpGT, 0, assertions.UnitNone), assertions.Tags{Phase: "fault"})}, []float64{0}},
		{"not equal and leading dot", "error_rate: rate!=.5",
			[]assertions.Threshold{th("error_rate", rate, 0, assertions.OpNE, 0.5, assertions.UnitNone)}, []float64{0.5}},
		{"trailing dot", "ttft: p(0)>=5.",
			[]assertions.Threshold{th("ttft", pct, 0, assertions.OpGE, 5, assertions.UnitNone)}, []float64{5}},
		{"number then unit after space", "ttft: p(100) < 2 s",
			[]assertions.Threshold{th("ttft", pct, 100, assertions.OpLT, 2, assertions.UnitSecond)}, []float64{2000}},
		{"fault tag", "recovery_time{fault:oom}: max<30s",
			[]assertions.Threshold{withTags(th("recovery_time", maxA, 0, assertions.OpLT, 30, assertions.UnitSecond), assertions.Tags{Fault: "oom"})}, []float64{30000}},
		{"bare URL with colons", "ttft{endpoint:http://127.0.0.1:8000/v1}: p(99)<1s",
			[]assertions.Threshold{withTags(th("ttft", pct, 99, assertions.OpLT, 1, assertions.UnitSecond), assertions.Tags{Endpoint: "http://127.0.0.1:8000/v1"})}, []float64{1000}},
		{"double-quoted value", `ttft{endpoint:"http://h/v1?a=1,b={2}", class:"say \"hi\""}: avg<1`,
			[]assertions.Threshold{withTags(th("ttft", avg, 0, assertions.OpLT, 1, assertions.UnitNone), assertions.Tags{Endpoint: "http://h/v1?a=1,b={2}", Class: `say "hi"`})}, []float64{1}},
		{"single-quoted value", `ttft{class:'a, b'}: avg<1`,
			[]assertions.Threshold{withTags(th("ttft", avg, 0, assertions.OpLT, 1, assertions.UnitNone), assertions.Tags{Class: "a, b"})}, []float64{1}},
		{"empty tag list", "ttft{}: avg<1",
			[]assertions.Threshold{th("ttft", avg, 0, assertions.OpLT, 1, assertions.UnitNone)}, []float64{1}},
		{"all tags", "e2e{phase:after,fault:kill-replica,class:chat,endpoint:http://a}: p(90)<1",
			[]assertions.Threshold{withTags(th("e2e", pct, 90, assertions.OpLT, 1, assertions.UnitNone),
				assertions.Tags{Phase: "after", Fault: "kill-replica", Class: "chat", Endpoint: "http://a"})}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := assertions.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
			for i, g := range got {
				if b := g.Expr.Bound(); b != tt.wantBound[i] {
					t.Errorf("threshold %d bound: got %v, want %v", i, b, tt.wantBound[i])
				}
				again, err := assertions.Parse(g.String())
				if err != nil || len(again) != 1 || again[0] != g {
					t.Errorf("String %q reparses to %+v, %v; want %+v", g.String(), again, err, g)
				}
			}
		})
	}
}

func TestThresholdString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ttft : p( 99.9 ) <= 0.5 s", "ttft: p(99.9)<=0.5s"},
		{"ttft{class:chat,phase:fault}: med<200", "ttft{phase:fault,class:chat}: med<200"},
		{"requests_lost: count===0", "requests_lost: count==0"},
		{"tpot: avg<5µs", "tpot: avg<5us"},
		{"error_rate: rate<.5%", "error_rate: rate<0.5%"},
		{`ttft{class:'a, b'}: avg<1`, `ttft{class:"a, b"}: avg<1`},
		{"ttft{class:a\tb}: avg<1", `ttft{class:"a\tb"}: avg<1`},
		{"ttft: avg<" + strings.Repeat("0", 30) + "1.50", "ttft: avg<1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := assertions.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if s := got[0].String(); s != tt.want {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	allMetrics := "ttft, itl, tpot, e2e, send_lag, client_queue, connect, recovery_time, time_to_recover, oom_recovery_time, " +
		"input_tokens, output_tokens, error_rate, truncation_rate, rejection_rate, throttle_rate, " +
		"repetition_rate, empty_output_rate, usage_mismatch_rate, integrity_error_rate, output_consistency, output_divergence_at, output_distinct_answers, requests, requests_lost, requests_per_s, " +
		"input_tokens_per_s, output_tokens_per_s, total_tokens_per_s, goodput"
	tests := []struct {
		name   string
		in     string
		offset int
		msg    string
	}{
		{"bad unit", "ttft: p(99)<500xs", 15, `unknown unit "xs" (want ms, s or us)`},
		{"minutes refused", "ttft: p(99)<5m", 13, `unit "m" is not accepted (minutes or milli?): write 60s for a minute, 1ms for a millisecond`},
		{"unknown metric with suggestion", "ttfx: p(99)<500ms", 0, `unknown metric "ttfx" (did you mean "ttft"?)`},
		{"unknown metric upper case", "TTFT: p(99)<500ms", 0, `unknown metric "TTFT" (did you mean "ttft"?)`},
		{"unknown metric listed", "latency: p(99)<5", 0, `unknown metric "latency" (want one of ` + allMetrics + `)`},
		{"no metric", ": p(99)<5", 0, "expected a metric name such as ttft or error_rate"},
		{"rate on a duration", "ttft: rate<0.1", 6,
			`aggregation "rate" does not apply to ttft (a duration in ms): want avg, min, max, med, p(N) or count`},
		{"percentile on a rate", "error_rate: p(99)<0.1", 12,
			`aggregation "p(99)" does not apply to error_rate (a rate from 0 to 1): want rate`},
		{"avg on a counter", "requests_lost: avg<1", 15,
			`aggregation "avg" does not apply to requests_lost (a counter): want count or rate`},
		{"avg on a value", "goodput: avg>5", 9,
			`aggregation "avg" does not apply to goodput (a per-second value): want value`},
		{"value on tokens", "output_tokens: value>5", 15,
			`aggregation "value" does not apply to output_tokens (a distribution of tokens): want avg, min, max, med, p(N) or count`},
		{"rate out of range", "error_rate: rate<5", 17,
			"rate 5 out of range: a rate is a fraction from 0 to 1 (write 5% for a percentage)"},
		{"rate percent out of range", "error_rate: rate<150%", 17,
			"rate 150% out of range: a rate is a fraction from 0 to 1 (write 150% for a percentage)"},
		{"time unit on a rate", "error_rate: rate<5ms", 18,
			`error_rate is a fraction from 0 to 1: write rate<0.01 or rate<1%, not a unit "ms"`},
		{"percent on a duration", "ttft: p(99)<5%", 13, "ttft is a duration: write the bound in ms, s or us, not %"},
		{"unit on a count", "requests_lost: count==0ms", 23,
			`count of requests_lost takes a plain number (requests), not a unit "ms"`},
		{"unit on a duration count", "ttft: count>5s", 13, `count of ttft takes a plain number (samples), not a unit "s"`},
		{"unit on tokens", "output_tokens: avg<5s", 20, `output_tokens takes a plain number (tokens), not a unit "s"`},
		{"unit on counter rate", "requests: rate>5%", 16, `requests takes a plain number (requests per second), not a unit "%"`},
		{"unit on value", "goodput: value>5s", 16, `goodput takes a plain number (per second), not a unit "s"`},
		{"percentile out of range", "ttft: p(101)<5", 8, "percentile 101 out of range (want 0 to 100)"},
		{"percentile without parens", "ttft: p99<5", 7, `expected "(" after p: write a percentile as p(99)`},
		{"percentile unclosed", "ttft: p(99<5", 10, `expected ")" to close p(`},
		{"single equals", "ttft: p(99)=5", 11, `"=" is not an operator (use == to compare for equality)`},
		{"bang alone", "ttft: p(99)!5", 11, `"!" is not an operator (use != for inequality)`},
		{"no operator", "ttft: p(99)5", 11, "expected an operator (<, <=, >, >=, == or !=)"},
		{"no number", "ttft: p(99)<", 12, "expected a number"},
		{"signed number", "ttft: p(99)<-5", 12, "expected a number without a sign"},
		{"exponent", "ttft: p(99)<1e5", 13, `unknown unit "e" (want ms, s or us)`},
		{"huge number", "ttft: p(99)<1" + strings.Repeat("0", 400), 12, "number 1" + strings.Repeat("0", 400) + " too large"},
		{"huge after scaling", "ttft: p(99)<1" + strings.Repeat("0", 306) + "s", 12, "number 1" + strings.Repeat("0", 306) + " too large"},
		{"unknown aggregation", "ttft: avgg<5", 6, `unknown aggregation "avgg" (want avg, min, max, med, p(N), count, rate or value)`},
		{"no aggregation", "ttft: <5", 6, "expected an aggregation (avg, min, max, med, p(N), count, rate or value)"},
		{"no colon", "ttft p(99)<5", 5, `expected ":" after the metric and its tags, then expressions such as p(99)<500ms`},
		{"no expression", "ttft:", 5, "expected an expression such as p(99)<500ms or rate<0.01"},
		{"trailing comma", "ttft: p(99)<5,", 14, "expected an expression such as p(99)<500ms or rate<0.01"},
		{"missing comma", "ttft: p(99)<5 p(50)<1", 14, `unexpected 'p' after the expression (separate expressions with ",")`},
		{"trailing junk", "ttft: p(99)<5ms)", 15, `unexpected ')' after the expression (separate expressions with ",")`},
		{"bad phase", "ttft{phase:warmup}: avg<1", 11, `unknown phase "warmup" (want baseline, fault, recovery or after)`},
		{"bad tag", "ttft{phsae:fault}: avg<1", 5, `unknown tag "phsae" (want phase, fault, class, endpoint or scenario)`},
		{"duplicate tag", "ttft{phase:fault,phase:fault}: avg<1", 17, `tag "phase" given twice`},
		{"unclosed tags", "ttft{phase:fault: avg<1", 23, `missing "}" to close the tag list`},
		{"unterminated quote", `ttft{class:"chat}: avg<1`, 11, "unterminated quoted tag value"},
		{"bad escape", `ttft{class:"a\qb"}: avg<1`, 11, `bad quoted tag value "a\qb" (use Go string escapes such as \" and \\)`},
		{"empty quoted", `ttft{class:""}: avg<1`, 11, "empty tag value"},
		{"empty value", "ttft{class:}: avg<1", 11, "expected a tag value"},
		{"no tag name", "ttft{:chat}: avg<1", 5, "expected a tag name (phase, fault, class, endpoint or scenario)"},
		{"tag without colon", "ttft{class}: avg<1", 10, `expected ":" after tag "class"`},
		{"brace in bare value", "ttft{class:a{b}: avg<1", 12, `expected "," or "}" after the tag value, found '{'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := assertions.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, got)
			}
			pes := assertions.ParseErrors(err)
			if len(pes) != 1 {
				t.Fatalf("Parse(%q): got %d problems, want 1: %v", tt.in, len(pes), err)
			}
			pe := pes[0]
			if pe.Msg != tt.msg || pe.Offset != tt.offset || pe.Input != tt.in || pe.What != "threshold" {
				t.Errorf("Parse(%q):\n got offset %d %q (input %q)\nwant offset %d %q", tt.in, pe.Offset, pe.Msg, pe.Input, tt.offset, tt.msg)
			}
			var as *assertions.ParseError
			if !errors.As(err, &as) || as != pe {
				t.Errorf("errors.As did not find the *ParseError")
			}
		})
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	in := "ttfx{phase:nope,colour:red}: p(99)<5xs, avgg<1, p(50)<2"
	_, err := assertions.Parse(in)
	pes := assertions.ParseErrors(err)
	type problem struct {
		offset int
		msg    string
	}
	var got []problem
	for _, pe := range pes {
		got = append(got, problem{pe.Offset, pe.Msg})
	}
	want := []problem{
		{0, `unknown metric "ttfx" (did you mean "ttft"?)`},
		{11, `unknown phase "nope" (want baseline, fault, recovery or after)`},
		{16, `unknown tag "colour" (want phase, fault, class, endpoint or scenario)`},
		{36, `unknown unit "xs" (want ms, s or us)`},
		{40, `unknown aggregation "avgg" (want avg, min, max, med, p(N), count, rate or value)`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %v\nwant %v", got, want)
	}
}

func TestParseErrorCaret(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"issue example", "ttft: p(99)<500xs",
			"threshold \"ttft: p(99)<500xs\": unknown unit \"xs\" (want ms, s or us)\n" +
				"    ttft: p(99)<500xs\n" +
				"                   ^"},
		{"multi-byte before the caret counts as one column", "ttft{class:\u00b5}: p(99)<5xs",
			"threshold \"ttft{class:\u00b5}: p(99)<5xs\": unknown unit \"xs\" (want ms, s or us)\n" +
				"    ttft{class:\u00b5}: p(99)<5xs\n" +
				"                          ^"},
		{"tab kept so that columns line up", "ttft:\tp(99)<5xs",
			"threshold \"ttft:\\tp(99)<5xs\": unknown unit \"xs\" (want ms, s or us)\n" +
				"    ttft:\tp(99)<5xs\n" +
				"         \t       ^"},
		{"only the offending line of a multi-line input", "ttft:\n  p(99)<5xs",
			"threshold \"ttft:\\n  p(99)<5xs\": unknown unit \"xs\" (want ms, s or us)\n" +
				"      p(99)<5xs\n" +
				"             ^"},
		{"caret at the end", "ttft:",
			"threshold \"ttft:\": expected an expression such as p(99)<500ms or rate<0.01\n" +
				"    ttft:\n" +
				"         ^"},
		{"control characters shown as replacement", "ttft\x00: avg<1",
			"threshold \"ttft\\x00: avg<1\": expected \":\" after the metric and its tags, then expressions such as p(99)<500ms\n" +
				"    ttft\ufffd: avg<1\n" +
				"        ^"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := assertions.Parse(tt.in)
			if err == nil {
				t.Fatal("want an error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	got, err := assertions.ParseFlags([]string{"ttft: p(99)<500ms", "error_rate: rate<0.01"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ttft: p(99)<500ms", "error_rate: rate<0.01"}
	if len(got) != len(want) {
		t.Fatalf("got %d thresholds, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("threshold %d: got %q, want %q", i, got[i], want[i])
		}
	}

	_, err = assertions.ParseFlags([]string{"ttft: p(99)<5xs", "error_rate: rate<0.01", "nope: avg<1"})
	pes := assertions.ParseErrors(err)
	if len(pes) != 2 || pes[0].Input != "ttft: p(99)<5xs" || pes[1].Input != "nope: avg<1" {
		t.Errorf("got %d problems (%v), want one for the first and one for the third flag", len(pes), err)
	}
}

func TestParseKey(t *testing.T) {
	m, tags, err := assertions.ParseKey(" e2e{phase:fault} ")
	if err != nil || m != "e2e" || tags != (assertions.Tags{Phase: "fault"}) {
		t.Errorf("got %q %+v %v, want e2e {Phase:fault}", m, tags, err)
	}
	_, _, err = assertions.ParseKey("e2e{phase:fault} x")
	pes := assertions.ParseErrors(err)
	if len(pes) != 1 || pes[0].Offset != 17 {
		t.Errorf("got %v, want one problem at offset 17", err)
	}
}

func TestParseKeyNameIsClass(t *testing.T) {
	// k6 scripts select a request by its name tag; it is recorded as the
	// class, so http_req_duration{name:weather} works unchanged.
	m, tags, err := assertions.ParseKey("e2e{name:weather}")
	if err != nil || m != "e2e" || tags != (assertions.Tags{Class: "weather"}) {
		t.Errorf("got %q %+v %v, want e2e {Class:weather}", m, tags, err)
	}
}

func TestTagsMatches(t *testing.T) {
	got := assertions.Tags{Phase: "fault", Fault: "oom", Class: "chat", Endpoint: "http://a"}
	tests := []struct {
		sel  assertions.Tags
		want bool
	}{
		{assertions.Tags{}, true},
		{assertions.Tags{Phase: "fault"}, true},
		{assertions.Tags{Phase: "fault", Class: "chat"}, true},
		{assertions.Tags{Phase: "baseline"}, false},
		{assertions.Tags{Fault: "oom", Endpoint: "http://b"}, false},
		{got, true},
	}
	for _, tt := range tests {
		if m := tt.sel.Matches(got); m != tt.want {
			t.Errorf("%+v.Matches: got %v, want %v", tt.sel, m, tt.want)
		}
	}
}

func TestOpHolds(t *testing.T) {
	tests := []struct {
		op        assertions.Op
		a, b      float64
		want      bool
		wantLabel string
	}{
		{assertions.OpLT, 1, 2, true, "<"}, {assertions.OpLT, 2, 2, false, "<"},
		{assertions.OpLE, 2, 2, true, "<="}, {assertions.OpLE, 3, 2, false, "<="},
		{assertions.OpGT, 3, 2, true, ">"}, {assertions.OpGT, 2, 2, false, ">"},
		{assertions.OpGE, 2, 2, true, ">="}, {assertions.OpGE, 1, 2, false, ">="},
		{assertions.OpEQ, 2, 2, true, "=="}, {assertions.OpEQ, 1, 2, false, "=="},
		{assertions.OpNE, 1, 2, true, "!="}, {assertions.OpNE, 2, 2, false, "!="},
	}
	for _, tt := range tests {
		if got := tt.op.Holds(tt.a, tt.b); got != tt.want || tt.op.String() != tt.wantLabel {
			t.Errorf("%v %s %v: got %v (%s), want %v (%s)", tt.a, tt.op, tt.b, got, tt.op, tt.want, tt.wantLabel)
		}
	}
}
