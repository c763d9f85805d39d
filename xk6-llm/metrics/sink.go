package metrics

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TrendScale is the factor between a trend's values and its histogram's
// integers: a trend records thousandths of its unit (microseconds for a
// trend in ms, the built-in latencies' resolution).
const TrendScale = 1000

// TrendMax is the largest value a trend records, in its unit (10⁹: eleven
// days in ms); larger values are clamped to it and negative ones to 0, so a
// sample is never lost.
const TrendMax = 1e9

// Sink aggregates the samples of one custom metric under one tag tuple.
// What it keeps depends on Kind: a trend an HDR histogram (3 significant
// digits) of its values; a rate its passes (non-zero samples) and total; a
// counter the sum of its samples; a gauge the last value and the smallest
// and largest (k6's value, min and max). Count is the
// number of samples for every kind.
//
// A Sink is not safe for concurrent use: its owner (the recorder) locks.
type Sink struct {
	Kind   Kind
	Count  int64
	Passes int64                   // rate: samples that were non-zero
	Sum    float64                 // counter: the sum of samples
	Last   float64                 // gauge: the last value
	Seq    uint64                  // gauge: the order of Last among the sinks merged, larger is later
	Lo, Hi float64                 // gauge: the smallest and largest value (0 without samples)
	Hist   *hdrhistogram.Histogram // trend: values × TrendScale
}

// NewSink returns an empty sink of kind k.
func NewSink(k Kind) *Sink {
	s := &Sink{Kind: k}
	if k == Trend {
		s.Hist = NewTrendHistogram()
	}
	return s
}

// NewTrendHistogram returns the empty histogram a trend sink uses.
func NewTrendHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(TrendMax*TrendScale), 3)
}

// Add adds one sample.
func (s *Sink) Add(v float64) {
	s.Count++
	switch s.Kind {
	case Trend:
		x := math.Round(v * TrendScale)
		if !(x >= 0) { // also NaN
			x = 0
		}
		_ = s.Hist.RecordValue(int64(min(x, TrendMax*TrendScale))) // in range after clamping
	case Rate:
		if v != 0 {
			s.Passes++
		}
	case Counter:
		s.Sum += v
	case Gauge:
		s.Last = v
		if s.Count == 1 || v < s.Lo {
			s.Lo = v
		}
		if s.Count == 1 || v > s.Hi {
			s.Hi = v
		}
	}
}

// Merge adds o's samples to s; both must have the same Kind. A gauge keeps
// the value with the larger Seq.
func (s *Sink) Merge(o *Sink) {
	if o == nil {
		return
	}
	if o.Count > 0 && s.Kind == Gauge {
		if s.Count == 0 || o.Lo < s.Lo {
			s.Lo = o.Lo
		}
		if s.Count == 0 || o.Hi > s.Hi {
			s.Hi = o.Hi
		}
	}
	s.Count += o.Count
	s.Passes += o.Passes
	s.Sum += o.Sum
	if o.Count > 0 && (o.Seq >= s.Seq || s.Count == o.Count) {
		s.Last, s.Seq = o.Last, o.Seq
	}
	if o.Hist != nil {
		if s.Hist == nil {
			s.Hist = NewTrendHistogram()
		}
		s.Hist.Merge(o.Hist)
	}
}

// Clone returns an independent copy of s.
func (s *Sink) Clone() *Sink {
	c := *s
	if s.Hist != nil {
		c.Hist = s.Hist.Clone()
	}
	return &c
}

// Rate is passes / total for a rate, 0 without samples.
func (s *Sink) Rate() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Passes) / float64(s.Count)
}

// Mean is a trend's mean, in its unit.
func (s *Sink) Mean() float64 { return s.hist().Mean() / TrendScale }

// Min is a trend's smallest value, in its unit.
func (s *Sink) Min() float64 { return float64(s.hist().Min()) / TrendScale }

// Max is a trend's largest value, in its unit.
func (s *Sink) Max() float64 { return float64(s.hist().Max()) / TrendScale }

// Quantile is a trend's value at percentile q (0 to 100), in its unit.
func (s *Sink) Quantile(q float64) float64 {
	return float64(s.hist().ValueAtQuantile(q)) / TrendScale
}

// StdDev is a trend's standard deviation, in its unit.
func (s *Sink) StdDev() float64 { return s.hist().StdDev() / TrendScale }

func (s *Sink) hist() *hdrhistogram.Histogram {
	if s.Hist == nil {
		return NewTrendHistogram()
	}
	return s.Hist
}
