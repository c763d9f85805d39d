package recording

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// recRes builds an ok Result sent at sent with the given ttft and e2e (µs
// offsets from sent) and output tokens (usage reported, matching chunks).
func recRes(tags Tags, sent time.Duration, ttftUs, e2eUs int64, out int, itl ...uint32) *Result {
	return &Result{
		Tags:          tags,
		Scheduled:     sent,
		Dequeued:      sent,
		Sent:          sent,
		FirstToken:    sent + time.Duration(ttftUs)*time.Microsecond,
		End:           sent + time.Duration(e2eUs)*time.Microsecond,
		ITLMicros:     itl,
		Outcome:       OutcomeOK,
		HTTPStatus:    200,
		OutputTokens:  out,
		ContentChunks: out,
		UsageReported: true,
		FinishReason:  "stop",
		OutputChars:   4 * out,
	}
}

// recFailed builds a failed Result of class cl with HTTP status st.
func recFailed(tags Tags, sent time.Duration, cl ErrorClass, st int) *Result {
	return &Result{Tags: tags, Scheduled: sent, Dequeued: sent, Sent: sent, End: sent + time.Millisecond,
		Outcome: OutcomeFailed, Class: cl, HTTPStatus: st}
}

func TestRecorderExactDistributions(t *testing.T) {
	r := NewRecorder(Options{})
	base := time.Second
	for i := range 10 {
		sent := base + time.Duration(i)*10*time.Millisecond
		res := recRes(Tags{Class: "chat"}, sent, int64(100*(i+1)), int64(1000+100*i), i+2, 10, 20)
		res.Scheduled = sent - time.Duration(10*i)*time.Microsecond
		res.Dequeued = res.Scheduled
		res.InputTokens = 100*(i+1) + 1
		res.PromptTokensSent = 100 * (i + 1)
		r.Record(res)
	}
	// A cancelled request that got its first token counts in ttft and itl,
	// not in e2e, tpot or token counts.
	c := recRes(Tags{Class: "chat"}, 2*time.Second, 1100, 1500, 3, 30)
	c.Outcome, c.Class = OutcomeCancelled, ClassCancelled
	r.Record(c)
	// A failed request without a first token counts in send_lag only.
	r.Record(recFailed(Tags{Class: "chat"}, 2*time.Second, ClassConnect, 0))
	// A dropped request was never sent.
	r.Record(&Result{Tags: Tags{Class: "chat"}, Scheduled: 2 * time.Second, Outcome: OutcomeDropped})
	sum := r.Finish(3 * time.Second)

	tests := []struct {
		m    Metric
		want Distribution
	}{
		// ttft 100…1000 µs and the cancelled one's 1100 µs.
		{MetricTTFT, Distribution{Count: 11, Mean: 600, Min: 100, P50: 600, P90: 1000, P95: 1000, P99: 1100, P999: 1100, Max: 1100}},
		// e2e 1000…1900 µs.
		{MetricE2E, Distribution{Count: 10, Mean: 1450, Min: 1000, P50: 1400, P90: 1800, P95: 1900, P99: 1900, P999: 1900, Max: 1900}},
		// tpot = 900 µs / (out−1): 900, 450, 300, 225, 180, 150, 128, 112, 100, 90.
		{MetricTPOT, Distribution{Count: 10, Mean: 263.5, Min: 90, P50: 150, P90: 450, P95: 900, P99: 900, P999: 900, Max: 900}},
		// send lag 0…90 µs, then 0 for the cancelled and the failed ones.
		{MetricSendLag, Distribution{Count: 12, Mean: 37.5, Min: 0, P50: 30, P90: 80, P95: 80, P99: 90, P999: 90, Max: 90}},
		{MetricClientQueue, Distribution{Count: 12, Mean: 0, Min: 0, P50: 0, P90: 0, P95: 0, P99: 0, P999: 0, Max: 0}},
		// usage prompt tokens 101…1001.
		{MetricInputTokens, Distribution{Count: 10, Mean: 551, Min: 101, P50: 501, P90: 901, P95: 1001, P99: 1001, P999: 1001, Max: 1001}},
		{MetricOutputTokens, Distribution{Count: 10, Mean: 6.5, Min: 2, P50: 6, P90: 10, P95: 11, P99: 11, P999: 11, Max: 11}},
		// itl: ten 10s, ten 20s, one 30.
		{MetricITL, Distribution{Count: 21, Mean: 330.0 / 21, Min: 10, P50: 20, P90: 20, P95: 20, P99: 30, P999: 30, Max: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.m.String(), func(t *testing.T) {
			got := sum.Distribution(tt.m, TagFilter{})
			got.StdDev = 0
			if math.Abs(got.Mean-tt.want.Mean) < 1e-9 {
				got.Mean = tt.want.Mean
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if got, want := sum.Distribution(MetricOutputTokens, TagFilter{}).StdDev, math.Sqrt(8.25); math.Abs(got-want) > 1e-9 {
		t.Errorf("output_tokens stddev = %v, want %v", got, want)
	}
}

func TestRecorderMillisecondPrecision(t *testing.T) {
	// Above 2048 µs HDR keeps 3 significant digits: 50 ms reads back within 0.1%.
	r := NewRecorder(Options{})
	for i := range 100 {
		r.Record(recRes(Tags{}, time.Second, 50_000+int64(i), 5_000_000, 100))
	}
	sum := r.Finish(10 * time.Second)
	d := sum.Distribution(MetricTTFT, TagFilter{})
	for _, v := range []int64{d.P50, d.P99, d.Min, d.Max} {
		if math.Abs(float64(v)-50_050) > 50_050*2e-3 {
			t.Errorf("ttft value %d µs, want 50.05 ms ± 0.2%%", v)
		}
	}
	if got := sum.Distribution(MetricE2E, TagFilter{}).P50; math.Abs(float64(got)-5e6) > 5e3 {
		t.Errorf("e2e p50 = %d µs, want 5 s ± 0.1%%", got)
	}
}

func TestRecorderClampsOutOfRange(t *testing.T) {
	r := NewRecorder(Options{})
	res := recRes(Tags{}, time.Second, 2*3600*1_000_000, 3*3600*1_000_000, 2, math.MaxUint32)
	res.Scheduled = 2 * time.Second // sent before scheduled: negative lag counts as 0
	res.Dequeued = 2 * time.Second
	r.Record(res)
	sum := r.Finish(4 * time.Hour)
	for _, m := range []Metric{MetricTTFT, MetricE2E, MetricITL, MetricSendLag} {
		if got := sum.Distribution(m, TagFilter{}).Count; got != 1 {
			t.Errorf("%s count = %d, want 1 (clamped, not lost)", m, got)
		}
	}
	if got := sum.Distribution(MetricE2E, TagFilter{}).Max; math.Abs(float64(got-LatencyMaxMicros)) > float64(LatencyMaxMicros)*1e-3 {
		t.Errorf("e2e max = %d, want clamped to %d", got, LatencyMaxMicros)
	}
	if got := sum.Distribution(MetricSendLag, TagFilter{}).Max; got != 0 {
		t.Errorf("send_lag = %d, want 0", got)
	}
}

func TestRecorderTagSubsets(t *testing.T) {
	base := Tags{Phase: "baseline", Class: "chat", Endpoint: "http://127.0.0.1:1/v1"}
	fchat := Tags{Phase: "fault", Fault: "kill", Class: "chat", Endpoint: "http://127.0.0.1:1/v1"}
	fbatch := Tags{Phase: "fault", Fault: "kill", Class: "batch", Endpoint: "http://127.0.0.1:1/v1"}
	r := NewRecorder(Options{})
	for i, x := range []struct {
		tags Tags
		ttft int64
	}{{base, 100}, {base, 200}, {fchat, 300}, {fchat, 400}, {fbatch, 500}, {fbatch, 600}, {fbatch, 700}} {
		r.Record(recRes(x.tags, time.Duration(i+1)*time.Second, x.ttft, 1000, 5))
	}
	r.Record(recFailed(fbatch, 8*time.Second, ClassHTTP5xx, 500))
	r.Record(recFailed(fchat, 8*time.Second, ClassHTTP429, 429))
	r.Record(recFailed(base, 8*time.Second, ClassReset, 0))

	tests := []struct {
		name              string
		f                 TagFilter
		count, p50, max   int64
		failed, throttled int64
		errRate           float64
	}{
		{"all", TagFilter{}, 7, 400, 700, 3, 1, 3.0 / 10},
		{"phase:fault", TagFilter{Phase: "fault"}, 5, 500, 700, 2, 1, 2.0 / 7},
		{"fault:kill", TagFilter{Fault: "kill"}, 5, 500, 700, 2, 1, 2.0 / 7},
		{"class:chat", TagFilter{Class: "chat"}, 4, 200, 400, 2, 1, 2.0 / 6},
		{"phase:fault,class:batch", TagFilter{Phase: "fault", Class: "batch"}, 3, 600, 700, 1, 0, 1.0 / 4},
		{"phase:recovery", TagFilter{Phase: "recovery"}, 0, 0, 0, 0, 0, 0},
	}
	sum := r.Finish(10 * time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []struct {
				name string
				h    Distribution
				c    Counts
			}{
				{"live", Summarize(r.Histogram(MetricTTFT, tt.f)), r.Counts(tt.f)},
				{"summary", sum.Distribution(MetricTTFT, tt.f), sum.Counts(tt.f)},
			} {
				if src.h.Count != tt.count || src.h.P50 != tt.p50 || src.h.Max != tt.max {
					t.Errorf("%s ttft count/p50/max = %d/%d/%d, want %d/%d/%d", src.name, src.h.Count, src.h.P50, src.h.Max, tt.count, tt.p50, tt.max)
				}
				if src.c.Failed != tt.failed || src.c.Throttled != tt.throttled {
					t.Errorf("%s failed/throttled = %d/%d, want %d/%d", src.name, src.c.Failed, src.c.Throttled, tt.failed, tt.throttled)
				}
				if got := src.c.ErrorRate(); math.Abs(got-tt.errRate) > 1e-12 {
					t.Errorf("%s error_rate = %v, want %v", src.name, got, tt.errRate)
				}
			}
		})
	}
	if got, want := len(sum.Tuples), 3; got != want {
		t.Fatalf("tuples = %d, want %d", got, want)
	}
	if got := sum.Tuples[0].Tags; got != base {
		t.Errorf("first tuple = %+v, want sorted order starting with %+v", got, base)
	}
}

func TestRecorderRates(t *testing.T) {
	r := NewRecorder(Options{})
	at := time.Second
	a := recRes(Tags{}, at, 100, 1000, 10)
	a.FinishReason, a.NgramsTotal, a.NgramsRepeated = "length", 8, 2
	b := recRes(Tags{}, at, 100, 1000, 10)
	b.ContentChunks, b.NgramsTotal = 7, 8 // 3 chunks fewer than usage: beyond max(2, 5 %), a mismatch
	c := recRes(Tags{}, at, 100, 1000, 0)
	c.UsageReported, c.OutputChars, c.FirstToken = false, 0, 0
	r.Record(a)
	r.Record(b)
	r.Record(c)
	for range 3 {
		d := recRes(Tags{}, at, 100, 1000, 4)
		d.NgramsTotal = 4
		r.Record(d)
	}
	r.Record(recFailed(Tags{}, at, ClassHTTP429, 429))
	r.Record(recFailed(Tags{}, at, ClassHTTP4xx, 400))
	r.Record(recFailed(Tags{}, at, ClassHTTP4xx, 413))
	r.Record(recFailed(Tags{}, at, ClassHTTP5xx, 500))
	r.Record(recFailed(Tags{}, at, ClassConnect, 0))
	r.Record(&Result{Scheduled: at, Dequeued: at, Sent: at, End: 2 * at, Outcome: OutcomeCancelled, Class: ClassCancelled})
	r.Record(&Result{Scheduled: at, Outcome: OutcomeDropped})
	r.Record(&Result{Scheduled: at, Outcome: OutcomeDropped})
	cnt := r.Counts(TagFilter{})
	methods := map[string]func() float64{
		"error_rate": cnt.ErrorRate, "throttle_rate": cnt.ThrottleRate, "rejection_rate": cnt.RejectionRate,
		"truncation_rate": cnt.TruncationRate, "repetition_rate": cnt.RepetitionRate,
		"empty_output_rate": cnt.EmptyOutputRate, "usage_mismatch_rate": cnt.UsageMismatchRate,
		"cancel_rate": cnt.CancelRate, "drop_rate": cnt.DropRate, "good_rate": cnt.GoodRate,
	}

	tests := []struct {
		name string
		want float64
	}{
		{"error_rate", 5.0 / 12},
		{"throttle_rate", 1.0 / 12},
		{"rejection_rate", 2.0 / 12},
		{"truncation_rate", 1.0 / 12},
		{"repetition_rate", 2.0 / 28},
		{"empty_output_rate", 1.0 / 6},
		{"usage_mismatch_rate", 1.0 / 5},
		{"cancel_rate", 1.0 / 12},
		{"drop_rate", 2.0 / 14},
		{"good_rate", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cnt.Rate(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// The named methods agree with Rate.
			if m := methods[tt.name]; m == nil || m() != got {
				t.Errorf("method for %s disagrees with Rate", tt.name)
			}
		})
	}
	if _, err := cnt.Rate("nope_rate"); err == nil {
		t.Error("Rate(nope_rate): want an error")
	}
	wantClasses := map[string]int64{"http_429": 1, "http_4xx": 2, "http_5xx": 1, "connect": 1, "cancelled": 1}
	got := cnt.ErrorsByClass()
	if len(got) != len(wantClasses) {
		t.Errorf("errors by class = %v, want %v", got, wantClasses)
	}
	for k, v := range wantClasses {
		if got[k] != v {
			t.Errorf("errors[%s] = %d, want %d", k, got[k], v)
		}
	}
	if cnt.OutputTokens != 10+10+0+12 {
		t.Errorf("output tokens = %d, want 32", cnt.OutputTokens)
	}
}

func TestRecorderUnknownOutcomeAndClassAreVisible(t *testing.T) {
	r := NewRecorder(Options{})
	r.Record(&Result{Scheduled: time.Second, Sent: time.Second, End: 2 * time.Second}) // Outcome 0: engine bug
	r.Record(&Result{Scheduled: time.Second, Sent: time.Second, End: 2 * time.Second, Outcome: OutcomeFailed})
	c := r.Counts(TagFilter{})
	if c.Failed != 2 || c.Class(ClassUnknown) != 2 {
		t.Errorf("failed/unknown = %d/%d, want 2/2", c.Failed, c.Class(ClassUnknown))
	}
}

func TestRecorderGoodput(t *testing.T) {
	tests := []struct {
		name     string
		slo      SLO
		wantGood int64
	}{
		// good: #1 and #4 (no tpot with one token); #2 misses ttft, #3 tpot,
		// #5 failed, #6 ok without a first token.
		{"ttft+tpot", SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond}, 2},
		// e2e ≤ 2 s: #1 (1.57 s), #2 (1.6 s), #4 (0.1 s), #6 (1 s); #3 takes 2.5 s.
		{"e2e", SLO{E2E: 2 * time.Second}, 4},
		{"none", SLO{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(Options{SLO: tt.slo})
			at := time.Second
			r.Record(recRes(Tags{}, at, 400_000, 1_570_000, 30)) // tpot 40 ms
			r.Record(recRes(Tags{}, at, 600_000, 1_600_000, 30)) // ttft 600 ms
			r.Record(recRes(Tags{}, at, 100_000, 2_500_000, 41)) // tpot 60 ms
			r.Record(recRes(Tags{}, at, 100_000, 100_000, 1))    // one token
			r.Record(recFailed(Tags{}, at, ClassHTTP5xx, 500))   // failed
			empty := recRes(Tags{}, at, 0, 1_000_000, 0)         // no first token
			empty.FirstToken = 0
			r.Record(empty)
			sum := r.Finish(10 * time.Second)
			if got := sum.Counts(TagFilter{}).Good; got != tt.wantGood {
				t.Errorf("good = %d, want %d", got, tt.wantGood)
			}
			if got, want := sum.Throughput().GoodputPerS, float64(tt.wantGood)/10; got != want {
				t.Errorf("goodput = %v/s, want %v/s", got, want)
			}
			if got := sum.Window(0, 10*time.Second).GoodputPerSecond(); got != float64(tt.wantGood)/10 {
				t.Errorf("window goodput = %v/s, want %v/s", got, float64(tt.wantGood)/10)
			}
		})
	}
}

func TestRecorderAccounting(t *testing.T) {
	r := NewRecorder(Options{})
	outcomes := []Outcome{OutcomeOK, OutcomeOK, OutcomeOK, OutcomeFailed, OutcomeCancelled}
	for i, o := range outcomes {
		at := time.Duration(i) * 100 * time.Millisecond
		r.RequestStarted(at)
		res := recRes(Tags{}, at, 100, 1000, 3)
		res.Outcome = o
		r.RequestEnded(res.End)
		r.Record(res)
	}
	r.Record(&Result{Scheduled: time.Second, Outcome: OutcomeDropped})
	r.Record(&Result{Scheduled: time.Second, Outcome: OutcomeDropped})
	got := r.Finish(2 * time.Second).Requests()
	want := Requests{Scheduled: 7, Sent: 5, OK: 3, Failed: 1, Cancelled: 1, Dropped: 2, Lost: 0}
	if got.ErrorsByClass["cancelled"] != 1 || got.ErrorsByClass["unknown"] != 1 || len(got.ErrorsByClass) != 2 {
		t.Errorf("errors by class = %v, want cancelled:1 unknown:1", got.ErrorsByClass)
	}
	got.ErrorsByClass, want.ErrorsByClass = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %+v, want %+v", got, want)
	}
	if got.Scheduled != got.OK+got.Failed+got.Cancelled+got.Dropped {
		t.Errorf("scheduled %d != ok+failed+cancelled+dropped", got.Scheduled)
	}

	// A request that started and never came back is lost.
	r.RequestStarted(3 * time.Second)
	if got := r.Finish(4 * time.Second).Requests().Lost; got != 1 {
		t.Errorf("lost = %d, want 1", got)
	}
}

func TestRecorderInFlight(t *testing.T) {
	r := NewRecorder(Options{})
	ms := time.Millisecond
	r.RequestStarted(500 * ms)
	r.RequestStarted(1000 * ms)
	r.RequestEnded(1500 * ms)
	r.RequestEnded(2500 * ms)
	sum := r.Finish(4 * time.Second)
	// Level 1 over [0.5,1), 2 over [1,1.5), 1 over [1.5,2.5): 2.5 request·s in 4 s.
	if got, want := sum.Concurrency, (Concurrency{Max: 2, Mean: 0.625}); got != want {
		t.Errorf("concurrency = %+v, want %+v", got, want)
	}
	tests := []struct {
		sec      int
		max      int64
		meanWant float64
	}{{0, 1, 0.5}, {1, 2, 1.5}, {2, 1, 0.5}, {3, 0, 0}}
	for _, tt := range tests {
		st := sum.Series.Second(tt.sec)
		if st.InFlightMax != tt.max || math.Abs(st.InFlightMean-tt.meanWant) > 1e-12 {
			t.Errorf("second %d in-flight max/mean = %d/%v, want %d/%v", tt.sec, st.InFlightMax, st.InFlightMean, tt.max, tt.meanWant)
		}
	}
	w := sum.Window(time.Second, 3*time.Second)
	if w.InFlightMax != 2 || math.Abs(w.InFlightMean-1.0) > 1e-12 {
		t.Errorf("window [1s,3s) in-flight max/mean = %d/%v, want 2/1", w.InFlightMax, w.InFlightMean)
	}
}

func TestRecorderSnapshot(t *testing.T) {
	r := NewRecorder(Options{})
	for i := range 40 {
		sent := time.Duration(i) * 100 * time.Millisecond // 10 per second over 4 s
		r.RequestStarted(sent)
		res := recRes(Tags{}, sent, int64(10+i), 50_000, 5)
		if i%10 == 9 {
			res = recFailed(Tags{}, sent, ClassHTTP5xx, 500)
		}
		r.RequestEnded(res.End)
		r.Record(res)
	}
	r.RequestStarted(3990 * time.Millisecond) // still in flight
	l := r.Snapshot(4500 * time.Millisecond)
	// The last complete second, [3 s, 4 s), holds the requests that ended in
	// it: i = 30…38 ok (sent at 3.0…3.8 s, 50 ms each) and the failed i = 39.
	// The ttft p99 of [0, 4.5 s) is the largest ok ttft, i = 38: 48 µs.
	// The run so far, [0, 4.5 s), holds the 36 ok requests.
	want := Live{Elapsed: 4500 * time.Millisecond, RequestsPerS: 9, InFlight: 1, TTFTP99: 48 * time.Microsecond,
		Errors: 4, ErrorsPerS: 1, OutputTokensPerS: 45, RecentOK: 36, RecentSpan: 4500 * time.Millisecond}
	if l != want {
		t.Errorf("snapshot = %+v\nwant       %+v", l, want)
	}
}

func TestRecorderConcurrentUse(t *testing.T) {
	r := NewRecorder(Options{SLO: SLO{TTFT: time.Second}})
	const workers, each = 8, 2000
	tags := []Tags{{Class: "a"}, {Class: "b"}, {Phase: "fault", Class: "a"}}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				at := time.Duration(w*each+i) * time.Microsecond * 10
				r.RequestStarted(at)
				res := recRes(tags[i%len(tags)], at, int64(100+i%50), 2000, 4, 10, 20, 30)
				r.RequestEnded(res.End)
				r.Record(res)
			}
		})
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			r.Snapshot(time.Second)
			r.Window(0, time.Second)
			r.Counts(TagFilter{Class: "a"})
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	sum := r.Finish(time.Second)
	req := sum.Requests()
	if req.OK != workers*each || req.Sent != workers*each || req.Lost != 0 {
		t.Errorf("ok/sent/lost = %d/%d/%d, want %d/%d/0", req.OK, req.Sent, req.Lost, workers*each, workers*each)
	}
	if got := sum.Distribution(MetricITL, TagFilter{}).Count; got != 3*workers*each {
		t.Errorf("itl count = %d, want %d", got, 3*workers*each)
	}
	if got := sum.Counts(TagFilter{}).Good; got != workers*each {
		t.Errorf("good = %d, want %d", got, workers*each)
	}
	w := sum.Window(0, time.Second)
	if w.Counts.OK != workers*each {
		t.Errorf("time series ok = %d, want %d", w.Counts.OK, workers*each)
	}
	if h := w.Histogram(MetricITL); h.Count() != 3*workers*each {
		t.Errorf("time series itl count = %d, want %d", h.Count(), 3*workers*each)
	}
	if sum.Concurrency.Max < 1 || sum.Concurrency.Max > workers {
		t.Errorf("in-flight max = %d, want 1…%d", sum.Concurrency.Max, workers)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	r := NewRecorder(Options{SLO: SLO{TTFT: time.Second}})
	res := recRes(Tags{Phase: "baseline", Class: "chat"}, time.Second, 200_000, 3_000_000, 64, make([]uint32, 63)...)
	r.Record(res) // warm up: histograms of the tuple
	if n := testing.AllocsPerRun(1000, func() { r.Record(res) }); n != 0 {
		t.Errorf("Record allocates %v times per call in steady state, want 0", n)
	}
}

func TestSummaryIsASnapshot(t *testing.T) {
	r := NewRecorder(Options{})
	r.Record(recRes(Tags{}, time.Second, 100, 1000, 3))
	sum := r.Finish(2 * time.Second)
	r.Record(recRes(Tags{}, time.Second, 100, 1000, 3)) // straggler after Finish: late path
	if got := sum.Counts(TagFilter{}).OK; got != 1 {
		t.Errorf("summary ok = %d after a later Record, want 1", got)
	}
	if got := sum.Window(0, 2*time.Second).Histogram(MetricTTFT).Count(); got != 1 {
		t.Errorf("summary window ttft count = %d, want 1", got)
	}
	if got := r.Window(0, 2*time.Second).Histogram(MetricTTFT).Count(); got != 2 {
		t.Errorf("recorder window ttft count = %d, want 2 (straggler counted)", got)
	}
}

func TestParseTagFilter(t *testing.T) {
	f, err := ParseTagFilter(map[string]string{"phase": "fault", "class": "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (TagFilter{Phase: "fault", Class: "chat"}); f != want {
		t.Errorf("got %+v, want %+v", f, want)
	}
	f, err = ParseTagFilter(map[string]string{"phase": "x", "color": "red", "zone": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (TagFilter{Phase: "x", Extra: ExtraTags(map[string]string{"zone": "a", "color": "red"})}); f != want {
		t.Errorf("got %+v, want the other keys as extra tags %+v", f, want)
	}
	for _, c := range []struct {
		tags Tags
		want bool
	}{
		{Tags{Phase: "x", Extra: ExtraTags(map[string]string{"color": "red", "zone": "a", "size": "l"})}, true},
		{Tags{Phase: "x", Extra: ExtraTags(map[string]string{"color": "red"})}, false},
		{Tags{Phase: "x", Extra: ExtraTags(map[string]string{"color": "blue", "zone": "a"})}, false},
		{Tags{Phase: "y", Extra: ExtraTags(map[string]string{"color": "red", "zone": "a"})}, false},
	} {
		if got := f.Match(c.tags); got != c.want {
			t.Errorf("%+v matches %+v: got %v, want %v", f, c.tags, got, c.want)
		}
	}
	if _, err := ParseTagFilter(map[string]string{"": "x"}); err == nil {
		t.Error("an empty key: want an error")
	}
}

func TestExtraTagsEncoding(t *testing.T) {
	a := ExtraTags(map[string]string{"b": "2", "a": "1", "bad\x1fkey": "x"})
	if b := ExtraTags(map[string]string{"a": "1", "b": "2"}); a != b {
		t.Errorf("the same tags encode differently: %q and %q", a, b)
	}
	var got []string
	for k, v := range ExtraPairs(a) {
		got = append(got, k+"="+v)
	}
	if strings.Join(got, ",") != "a=1,b=2" {
		t.Errorf("got pairs %q, want a=1,b=2 in key order (the key with a separator left out)", got)
	}
	if v, ok := ExtraGet(a, "b"); !ok || v != "2" {
		t.Errorf("get b: got %q, %v", v, ok)
	}
	if w := ExtraWith(a, "a", ""); w != ExtraTags(map[string]string{"b": "2"}) {
		t.Errorf("without a: got %q", w)
	}
	if ExtraTags(nil) != "" || len(ExtraMap("")) != 0 {
		t.Error("no tags must encode as \"\" and back")
	}
}
