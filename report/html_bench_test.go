package report

import (
	"bytes"
	"math"
	"testing"
)

// longRun is a document of an hour at one row per second with two fault
// windows and server series every 2 s, built directly (no recording): what
// the plots of a long soak cost.
func longRun() *Document {
	const secs = 3600
	d := &Document{SchemaVersion: 1, Name: "soak", Verdict: VerdictPass, DurationS: secs, Thresholds: []ThresholdResult{}}
	for t := range secs {
		v := func(base float64) *float64 {
			x := base * (1 + 0.2*math.Sin(float64(t)/17))
			return &x
		}
		d.Timeseries = append(d.Timeseries, SecondRow{
			T:            t,
			Counts:       Counts{OK: 20, Failed: int64(t % 7 / 6), ErrorsByClass: map[string]int64{"http_5xx": int64(t % 7 / 6)}, OutputTokens: 1200},
			InFlightMax:  30,
			InFlightMean: 24,
			TTFTP50Ms:    v(150), TTFTP99Ms: v(420), E2EP50Ms: v(1100), E2EP99Ms: v(3000),
			ITLP50Ms: v(18), ITLP99Ms: v(40),
		})
	}
	d.Faults = []FaultRecord{
		{Name: "slow-net", Type: "network.latency", PlannedAtS: 600, PlannedDurationS: 300, InjectedAtS: ptr(600.01), RevertedAtS: ptr(900.02), RevertOK: true},
		{Name: "kill", Type: "replica.kill", PlannedAtS: 1800, PlannedDurationS: 60, InjectedAtS: ptr(1800.01), RevertedAtS: ptr(1860.3), RevertOK: true},
	}
	for _, ep := range []string{"http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"} {
		for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"} {
			s := SeriesRecord{Endpoint: ep, Name: name}
			for t := 0.0; t < secs; t += 2 {
				s.Points = append(s.Points, [2]float64{t, 0.3 + 0.1*math.Sin(t/50)})
			}
			d.Server = append(d.Server, s)
		}
	}
	return d
}

// BenchmarkWriteHTML reports the time to render a report and the size of
// the page: the 60 s sample experiment (10 plots) and an hour-long soak.
func BenchmarkWriteHTML(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  *Document
	}{
		{"sample-60s", sampleExperiment(b)},
		{"soak-1h", longRun()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := WriteHTML(&buf, bc.doc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/1024, "KiB/page")
			b.Logf("%s: %d plots, %.0f KiB", bc.name, bytes.Count(buf.Bytes(), []byte(`<svg class="plot"`)), float64(buf.Len())/1024)
		})
	}
}
