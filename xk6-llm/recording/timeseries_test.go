package recording

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestSeriesAttributesToEndSecond(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Options{})
	// Sent in second 0, ends in second 2.
	r.Record(recRes(Tags{}, 900*time.Millisecond, 1000, 1_200_000, 3))
	// Dropped without an End: the second it was scheduled in.
	r.Record(&Result{Scheduled: 3500 * time.Millisecond, Outcome: OutcomeDropped})
	sum := r.Finish(5 * time.Second)
	tests := []struct {
		from, to         time.Duration
		wantOK, wantDrop int64
	}{
		{0, 2 * time.Second, 0, 0},
		{2 * time.Second, 3 * time.Second, 1, 0},
		{2500 * time.Millisecond, 2600 * time.Millisecond, 1, 0}, // rounds out to [2 s, 3 s)
		{3 * time.Second, 4 * time.Second, 0, 1},
		{0, time.Hour, 1, 1}, // clipped to the run
	}
	for _, tt := range tests {
		w := sum.Window(tt.from, tt.to)
		if w.Counts.OK != tt.wantOK || w.Counts.Dropped != tt.wantDrop {
			t.Errorf("Window(%v, %v) ok/dropped = %d/%d, want %d/%d", tt.from, tt.to, w.Counts.OK, w.Counts.Dropped, tt.wantOK, tt.wantDrop)
		}
	}
	if got := sum.Series.Len(); got != 5 {
		t.Errorf("series length = %d, want 5 (a row for every second of the run)", got)
	}
	if w := sum.Window(0, time.Hour); w.From != 0 || w.To != 5*time.Second {
		t.Errorf("clipped window = [%v, %v), want [0s, 5s)", w.From, w.To)
	}
}

func TestSeriesWindowPercentiles(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Options{})
	// Second s holds three requests with ttft 10+5s, 11+5s, 12+5s µs.
	for s := range 10 {
		for k := range 3 {
			sent := time.Duration(s)*time.Second + time.Duration(k)*100*time.Millisecond
			r.Record(recRes(Tags{}, sent, int64(10+5*s+k), 50_000, 11, 20, 30))
		}
	}
	check := func(name string, w *WindowStats) {
		t.Helper()
		tests := []struct {
			m    Metric
			p    float64
			want time.Duration
		}{
			// seconds 5…9: 35,36,37,40,41,42,45,46,47,50,51,52,55,56,57
			{MetricTTFT, 50, 46 * time.Microsecond},
			{MetricTTFT, 90, 56 * time.Microsecond},
			{MetricTTFT, 99, 57 * time.Microsecond},
			{MetricTTFT, 0, 35 * time.Microsecond},
			{MetricITL, 50, 20 * time.Microsecond},
			{MetricITL, 99, 30 * time.Microsecond},
		}
		for _, tt := range tests {
			got, ok := w.Percentile(tt.m, tt.p)
			if !ok || got != tt.want {
				t.Errorf("%s: %s p%v = %v (ok %v), want %v", name, tt.m, tt.p, got, ok, tt.want)
			}
		}
		if got := w.Histogram(MetricE2E).Count(); got != 15 {
			t.Errorf("%s: e2e count = %d, want 15", name, got)
		}
		if got := w.Histogram(MetricTPOT).Count(); got != 15 {
			t.Errorf("%s: tpot count = %d, want 15", name, got)
		}
		if _, ok := w.Percentile(MetricSendLag, 50); ok {
			t.Errorf("%s: send_lag is not kept per second, want ok=false", name)
		}
		if got := w.RequestsPerSecond(); got != 3 {
			t.Errorf("%s: req/s = %v, want 3", name, got)
		}
		if got := w.OutputTokensPerSecond(); got != 33 {
			t.Errorf("%s: output tokens/s = %v, want 33", name, got)
		}
	}
	// Live at 14 s: seconds 7… are still open (dense), older ones sealed, so
	// the window reads both forms.
	r.Snapshot(14 * time.Second)
	if r.series.sealedBefore != 7 {
		t.Fatalf("sealed before second %d, want 7", r.series.sealedBefore)
	}
	check("live", r.Window(5*time.Second, 10*time.Second))
	sum := r.Finish(10 * time.Second)
	check("summary", sum.Window(5*time.Second, 10*time.Second))
	rows := make([]SecondStats, sum.Series.Len())
	for i := range rows {
		rows[i] = sum.Series.Second(i)
	}
	loaded, err := NewSeries(rows, sum.Duration)
	if err != nil {
		t.Fatal(err)
	}
	check("reloaded", loaded.Window(5*time.Second, 10*time.Second))

	vals, n, err := sum.Series.Second(3).Percentiles(MetricTTFT, 0, 50, 100)
	if err != nil || n != 3 || !slices.Equal(vals, []int64{25, 26, 27}) {
		t.Errorf("second 3 ttft p0/p50/p100 = %v (n %d, err %v), want [25 26 27] n 3", vals, n, err)
	}
	if _, _, err := sum.Series.Second(3).Percentiles(MetricInputTokens, 50); err == nil {
		t.Error("input_tokens per second: want an error")
	}
}

func TestSeriesLateResultForSealedSecond(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Options{})
	r.Record(recRes(Tags{}, 100*time.Millisecond, 20, 200_000, 3))
	// Time moves on: second 0 is sealed.
	r.Record(recRes(Tags{}, 10*time.Second, 30, 200_000, 3))
	if r.series.sealedBefore == 0 {
		t.Fatal("second 0 still open; the test needs it sealed")
	}
	// A straggler that ended in second 0 arrives late.
	r.Record(recRes(Tags{}, 300*time.Millisecond, 40, 200_000, 3))
	w := r.Window(0, time.Second)
	if w.Counts.OK != 2 {
		t.Errorf("second 0 ok = %d, want 2", w.Counts.OK)
	}
	h := w.Histogram(MetricTTFT)
	if h.Count() != 2 || h.Min() != 20 || h.Max() != 40 {
		t.Errorf("second 0 ttft count/min/max = %d/%d/%d, want 2/20/40", h.Count(), h.Min(), h.Max())
	}
}

func TestSeriesWindowEmptyAndBounds(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Options{})
	r.Record(recRes(Tags{}, time.Second, 20, 1000, 3))
	sum := r.Finish(3 * time.Second)
	for _, tt := range []struct{ from, to time.Duration }{
		{2 * time.Second, 2 * time.Second},
		{5 * time.Second, 9 * time.Second},
		{2 * time.Second, time.Second},
	} {
		w := sum.Window(tt.from, tt.to)
		if w.Seconds() != 0 || w.Counts.Scheduled() != 0 || w.RequestsPerSecond() != 0 {
			t.Errorf("Window(%v, %v) = %v s, %d results; want empty", tt.from, tt.to, w.Seconds(), w.Counts.Scheduled())
		}
		if _, ok := w.Percentile(MetricTTFT, 50); ok {
			t.Errorf("Window(%v, %v): percentile of empty window ok=true", tt.from, tt.to)
		}
	}
	// A partial last second counts only the part before the run end.
	r2 := NewRecorder(Options{})
	r2.Record(recRes(Tags{}, 0, 20, 1000, 3))
	w := r2.Finish(1500*time.Millisecond).Window(0, 2*time.Second)
	if w.Seconds() != 1.5 || w.RequestsPerSecond() != 1/1.5 {
		t.Errorf("partial window = %v s, %v req/s; want 1.5 s, %v req/s", w.Seconds(), w.RequestsPerSecond(), 1/1.5)
	}
}

func TestNewSeriesRejectsBadRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rows []SecondStats
		want error
	}{
		{"out of order", []SecondStats{{Second: 2}, {Second: 1}}, nil},
		{"beyond the run", []SecondStats{{Second: 3600}}, nil},
		{"negative", []SecondStats{{Second: -1}}, nil},
		{"bad version", []SecondStats{{Second: 0, Hist: []byte{9, 0, 0, 0, 0}}}, errSecondEncoding},
		{"truncated", []SecondStats{{Second: 0, Hist: []byte{1, 1}}}, errSecondEncoding},
		{"trailing", []SecondStats{{Second: 0, Hist: []byte{1, 0, 0, 0, 0, 7}}}, errSecondEncoding},
		{"bucket out of range", []SecondStats{{Second: 0, Hist: []byte{1, 1, 0x80, 0x07, 1, 0, 0, 0}}}, errSecondEncoding},
		{"zero count", []SecondStats{{Second: 0, Hist: []byte{1, 1, 3, 0, 0, 0, 0}}}, errSecondEncoding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSeries(tt.rows, time.Minute)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEncodeSecondRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var d secondHists
	for range 5000 {
		slot := rng.IntN(numSecondMetrics)
		d[slot][logBucket(int64(rng.ExpFloat64()*50_000))]++
	}
	enc, _ := encodeSecond(&d, nil)
	var got secondHists
	if err := walkSecond(enc, func(slot, b int, c uint64) { got[slot][b] += uint32(c) }); err != nil {
		t.Fatal(err)
	}
	if got != d {
		t.Error("decoded second differs from the encoded one")
	}
	var empty secondHists
	if enc, _ := encodeSecond(&empty, nil); enc != nil {
		t.Errorf("empty second encodes as %v, want nil", enc)
	}
}

func FuzzWalkSecond(f *testing.F) {
	var d secondHists
	d[0][5], d[2][700], d[3][895] = 3, 1<<20, 1
	enc, _ := encodeSecond(&d, nil)
	f.Add(enc)
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got secondHists
		if err := walkSecond(b, func(slot, bk int, c uint64) {
			if slot < 0 || slot >= numSecondMetrics || bk < 0 || bk >= LogBuckets || c == 0 {
				t.Fatalf("walk gave slot %d bucket %d count %d", slot, bk, c)
			}
			got[slot][bk] += uint32(c)
		}); err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		again, _ := encodeSecond(&got, nil)
		var back secondHists
		if err := walkSecond(again, func(slot, bk int, c uint64) { back[slot][bk] += uint32(c) }); err != nil {
			t.Fatalf("re-encoded second does not decode: %v", err)
		}
		if back != got {
			t.Fatal("re-encoded second differs")
		}
	})
}

func TestLogHistogramPercentiles(t *testing.T) {
	t.Parallel()
	var h LogHistogram
	for _, v := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} {
		h.Record(v)
	}
	tests := []struct {
		p    float64
		want int64
	}{{0, 1}, {10, 1}, {25, 3}, {50, 5}, {90, 9}, {99, 10}, {100, 10}, {150, 10}}
	for _, tt := range tests {
		if got := h.ValueAtPercentile(tt.p); got != tt.want {
			t.Errorf("p%v = %d, want %d", tt.p, got, tt.want)
		}
	}
	if h.Mean() != 5.5 || h.Min() != 1 || h.Max() != 10 || h.Count() != 10 {
		t.Errorf("mean/min/max/count = %v/%d/%d/%d, want 5.5/1/10/10", h.Mean(), h.Min(), h.Max(), h.Count())
	}
	var o LogHistogram
	o.Record(-5) // negative counts as 0
	o.RecordN(20, 9)
	h.Merge(&o)
	if h.Count() != 20 || h.Min() != 0 || h.ValueAtPercentile(60) != 20 {
		t.Errorf("after merge count/min/p60 = %d/%d/%d, want 20/0/20", h.Count(), h.Min(), h.ValueAtPercentile(60))
	}
	h.Reset()
	if h.Count() != 0 || h.ValueAtPercentile(50) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Error("Reset left values behind")
	}
}

func TestLogHistogramRelativeError(t *testing.T) {
	t.Parallel()
	// Every value reads back within 1/64 of itself, from 1 µs to an hour.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		v := int64(math.Exp(rng.Float64() * math.Log(3.6e9)))
		b := logBucket(v)
		lower, width := logBucketBounds(b)
		if v < lower || v >= lower+width {
			t.Fatalf("value %d not in its bucket %d [%d, %d)", v, b, lower, lower+width)
		}
		if got := logBucketValue(b); math.Abs(float64(got-v)) > float64(v)/64 {
			t.Fatalf("value %d reads back as %d: error above 1/64", v, got)
		}
	}
	// Percentiles of a wide sample stay within 1/64 of the exact ones.
	var h LogHistogram
	vals := make([]int64, 20_000)
	for i := range vals {
		vals[i] = int64(math.Exp(rng.NormFloat64()*0.8+math.Log(200_000))) + 1
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, p := range []float64{50, 90, 99, 99.9} {
		exact := vals[percentileRank(p, uint64(len(vals)))-1]
		if got := h.ValueAtPercentile(p); math.Abs(float64(got-exact)) > float64(exact)/64 {
			t.Errorf("p%v = %d, exact %d: error above 1/64", p, got, exact)
		}
	}
	if got := logBucket(math.MaxInt64); got != LogBuckets-1 {
		t.Errorf("huge value bucket = %d, want the last (%d)", got, LogBuckets-1)
	}
}
