package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

func mustParse(t *testing.T, slos ...string) []assertions.Threshold {
	t.Helper()
	ths, err := assertions.ParseFlags(slos)
	if err != nil {
		t.Fatal(err)
	}
	return ths
}

func TestStepRequests(t *testing.T) {
	tests := []struct {
		slos []string
		want int
	}{
		{[]string{"ttft: p(99)<500ms"}, 1000},
		{[]string{"ttft: p(99.9)<500ms"}, 10000},
		{[]string{"ttft: p(95)<500ms", "e2e: p(90)<20s"}, 200},
		{[]string{"ttft: avg<500ms", "e2e: max<20s", "ttft: med<100ms"}, 200},
		{[]string{"error_rate: rate<0.01"}, 1000},
		{[]string{"error_rate: rate<5%"}, 200},
		{[]string{"error_rate: rate<0.001", "ttft: p(99)<1s"}, 10000},
		{[]string{"ttft: p(99.999)<1s"}, MaxStepRequests},
		{[]string{"goodput: value>10"}, 200},
	}
	for _, tt := range tests {
		if got := StepRequests(mustParse(t, tt.slos...)); got != tt.want {
			t.Errorf("StepRequests(%q) = %d, want %d", tt.slos, got, tt.want)
		}
	}
}

func TestStepLengthMeasure(t *testing.T) {
	l := StepLength{Requests: 1000, Min: 10 * time.Second, Max: 2 * time.Minute, Short: 10 * time.Second}
	tests := []struct {
		rate     float64
		wantFull bool
		d        time.Duration
		full     bool
	}{
		{100, true, 10 * time.Second, true},   // 1000 requests take 10 s
		{20, true, 50 * time.Second, true},    // 1000 requests take 50 s
		{1, true, 2 * time.Minute, true},      // capped: fewer requests than asked
		{1000, true, 10 * time.Second, true},  // at least Min
		{20, false, 10 * time.Second, false},  // a short ramp step
		{100, false, 10 * time.Second, true},  // short is as long as full: full
		{0.5, false, 40 * time.Second, false}, // a short step still measures 20 requests
		{0.1, false, 2 * time.Minute, true},   // ... unless that is the full length
		{0, true, 2 * time.Minute, true},      // rate unknown (a first closed-loop step)
	}
	for _, tt := range tests {
		d, full := l.Measure(tt.rate, tt.wantFull)
		if d != tt.d || full != tt.full {
			t.Errorf("Measure(%v, %v) = %v, %v; want %v, %v", tt.rate, tt.wantFull, d, full, tt.d, tt.full)
		}
	}
}

func TestClientLimitsCheck(t *testing.T) {
	l := DefaultClientLimits()
	tests := []struct {
		name string
		r    ClientReading
		want []string // fragments, one per reason
	}{
		{"on schedule", ClientReading{Expected: 1000, CV: 1, Sent: 985, SendLagP99: 3 * time.Millisecond, CPU: 0.5, ProcessCPU: 0.4}, nil},
		{"Poisson's own spread is not a slow client", ClientReading{Expected: 1000, CV: 1, Sent: 860, CPU: -1, ProcessCPU: -1}, nil},
		{"behind the schedule", ClientReading{Expected: 1000, CV: 1, Sent: 700, CPU: -1, ProcessCPU: -1}, []string{"sent 700 requests of the 1000 scheduled (70%)"}},
		{"constant arrivals leave less room", ClientReading{Expected: 1000, CV: 0, Sent: 940, CPU: -1, ProcessCPU: -1}, []string{"sent 940 requests"}},
		{"a window of less than one arrival", ClientReading{Expected: 0.4, CV: 0, Sent: 0, CPU: -1, ProcessCPU: -1}, nil},
		{"late sends", ClientReading{Expected: 100, Sent: 100, SendLagP99: 80 * time.Millisecond, CPU: -1, ProcessCPU: -1}, []string{"send lag p99 80ms above 50ms"}},
		{"drops", ClientReading{Sent: 90, Dropped: 10, CPU: -1, ProcessCPU: -1}, []string{"10 arrivals dropped at the in-flight cap (10.0%)"}},
		{"a busy machine, busy with this client", ClientReading{CPU: 0.98, ProcessCPU: 0.9}, []string{"client machine CPU 98% busy, 92% of it this process"}},
		{"a machine busy with something else", ClientReading{CPU: 0.99, ProcessCPU: 0.05}, nil},
		{"CPU not known", ClientReading{CPU: -1, ProcessCPU: -1}, nil},
		{"everything at once", ClientReading{Expected: 100, Sent: 50, Dropped: 50, SendLagP99: time.Second, CPU: 1, ProcessCPU: 1}, []string{"sent 50", "send lag", "dropped", "CPU"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := l.Check(tt.r)
			if len(got) != len(tt.want) {
				t.Fatalf("Check = %q, want %d reasons %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("reason %d = %q, want it to hold %q", i, got[i], w)
				}
			}
		})
	}
	if got := (ClientLimits{}).Check(ClientReading{Expected: 100, Sent: 1, SendLagP99: time.Hour, CPU: 1, ProcessCPU: 1}); len(got) != 0 {
		t.Errorf("zero limits check nothing, got %q", got)
	}
}

func TestGoodputFromSLOs(t *testing.T) {
	got := GoodputFromSLOs(mustParse(t, "ttft: p(99)<500ms", "ttft: p(50)<200ms", "e2e: max<20s", "tpot: avg<=50ms",
		"itl: p(99)<100ms", "ttft{class:chat}: p(99)<50ms", "e2e: p(99)>1ms", "error_rate: rate<0.01"))
	want := recording.SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond, E2E: 20 * time.Second}
	if got != want {
		t.Errorf("GoodputFromSLOs = %+v, want %+v", got, want)
	}
	if got := GoodputFromSLOs(mustParse(t, "error_rate: rate<0.01")); got.Given() {
		t.Errorf("without latency SLOs: %+v, want none", got)
	}
}

func TestStepSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range 1000 {
		s := StepSeed(42, i)
		if s >= 1<<53 {
			t.Fatalf("step %d's seed %d does not fit 53 bits", i, s)
		}
		if seen[s] {
			t.Fatalf("step %d repeats a seed", i)
		}
		seen[s] = true
		if StepSeed(42, i) != s {
			t.Fatal("StepSeed is not a function of its arguments")
		}
	}
	if StepSeed(1, 0) == StepSeed(2, 0) {
		t.Error("two searches' seeds give their first steps one seed")
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	base := Config{
		Targets: []string{"http://127.0.0.1:9/v1"}, Model: "m",
		Workload: workload.Config{InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(8)}.WithDefaults(),
		SLOs:     mustParse(t, "ttft: p(99)<500ms", "e2e: p(99)<40s", "error_rate: rate<0.01"),
	}
	c := base.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeRate || c.Search.Precision != 0.05 || c.Length.Requests != 1000 || c.Grace != 80*time.Second ||
		c.Goodput != (recording.SLO{TTFT: 500 * time.Millisecond, E2E: 40 * time.Second}) || c.Search.Integer {
		t.Errorf("defaults: %+v", c)
	}
	cc := base
	cc.Mode = ModeConcurrency
	if c := cc.WithDefaults(); !c.Search.Integer || c.Search.Min != 1 || c.Search.Max != 4096 {
		t.Errorf("concurrency defaults: %+v", c.Search)
	}
	bad := base
	bad.Targets, bad.SLOs = nil, mustParse(t, "ttft{phase:fault}: p(99)<1s")
	bad.Search = SearchConfig{Growth: 0.5, Precision: 3, Min: 10, Max: 1}
	bad.Arrival = workload.ArrivalConfig{Concurrency: 3}
	err := bad.WithDefaults().Validate()
	for _, w := range []string{"no target", "selects a phase", "growth 0.5", "precision 3", "load bounds [10, 1]", "rate mode varies an open loop"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate: %v; want it to say %q", err, w)
		}
	}
}
