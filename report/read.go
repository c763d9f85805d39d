package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Read loads a saved JSON run report and rebuilds its run (Document.Summary)
// from the encoded histograms, counters and time series, so that it can be
// queried, merged and compared like a live one.
func Read(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	d, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return d, nil
}

// Decode parses a JSON run report from r; see Read. Unknown fields (added
// by later schema versions) are ignored.
func Decode(r io.Reader) (*Document, error) {
	var d Document
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if d.SchemaVersion < 1 {
		return nil, fmt.Errorf("decode report: schema_version %d: not an llmchaos run report (want ≥ 1)", d.SchemaVersion)
	}
	if d.DurationS < 0 || math.IsNaN(d.DurationS) || d.DurationS > float64(math.MaxInt64)/1e9 {
		return nil, fmt.Errorf("decode report: duration_s %v out of range", d.DurationS)
	}
	dur := time.Duration(math.Round(d.DurationS * 1e9))
	reg, err := customRegistry(d.CustomMetrics)
	if err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	tuples := make([]*recording.TupleStats, 0, len(d.Histograms.ByTags))
	seen := make(map[recording.Tags]bool)
	for i, ts := range d.Histograms.ByTags {
		t, err := decodeTagSet(ts)
		if err != nil {
			return nil, fmt.Errorf("decode report: histograms.by_tags[%d]: %w", i, err)
		}
		if seen[t.Tags] {
			return nil, fmt.Errorf("decode report: histograms.by_tags[%d]: tags %v repeated", i, ts.Tags)
		}
		seen[t.Tags] = true
		if t.Custom, err = decodeCustom(reg, ts.Custom); err != nil {
			return nil, fmt.Errorf("decode report: histograms.by_tags[%d]: %w", i, err)
		}
		tuples = append(tuples, t)
	}
	rows := make([]recording.SecondStats, len(d.Timeseries))
	for i, row := range d.Timeseries {
		rows[i] = recording.SecondStats{
			Second: row.T, Counts: fromCounts(row.Counts),
			InFlightMax: row.InFlightMax, InFlightMean: row.InFlightMean, Hist: row.Hist,
		}
	}
	series, err := recording.NewSeries(rows, dur)
	if err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	var slo recording.SLO
	if d.SLO != nil {
		slo = recording.SLO{TTFT: fromMs(d.SLO.TTFTMs), TPOT: fromMs(d.SLO.TPOTMs), E2E: fromMs(d.SLO.E2EMs)}
	}
	conc := recording.Concurrency{Max: d.Concurrency.Max, Mean: d.Concurrency.Mean}
	d.run = recording.NewSummary(dur, d.Requests.Sent, slo, conc, tuples, series)
	d.run.Metrics = reg
	return &d, nil
}

func fromMs(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

func decodeTagSet(ts TagSet) (*recording.TupleStats, error) {
	f, err := recording.ParseTagFilter(ts.Tags)
	if err != nil {
		return nil, err
	}
	t := &recording.TupleStats{
		Tags:   recording.Tags(f),
		Counts: fromCounts(ts.Counts),
	}
	for m := range recording.NumMetrics {
		enc, ok := ts.HDR[histogramKey(m)]
		if !ok {
			continue
		}
		h, err := hdrhistogram.Decode([]byte(enc))
		if err != nil {
			return nil, fmt.Errorf("%s histogram: %w", histogramKey(m), err)
		}
		// Merge into the standard geometry so every histogram of a metric
		// merges with every other, whatever wrote it.
		std := recording.NewHistogram(m)
		if dropped := std.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("%s histogram: %d values out of range", histogramKey(m), dropped)
		}
		t.Hists[m] = std
	}
	return t, nil
}
