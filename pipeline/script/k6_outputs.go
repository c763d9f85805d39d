package script

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// The formats of SampleOutput, as k6's --out names them.
const (
	SampleFormatJSON = "json"
	SampleFormatCSV  = "csv"
)

// SampleFormats are the sample outputs k6's --out takes that llmchaos
// writes.
var SampleFormats = []string{SampleFormatJSON, SampleFormatCSV}

// SampleOutput is one of k6's --out outputs of every sample the run
// records: json (k6's one JSON object per line: a "Metric" line the first
// time a metric shows, then a "Point" line per sample) or csv (k6's
// columns: metric_name, timestamp in Unix seconds, metric_value, k6's
// default system tags, extra_tags, metadata), written to W as the run
// goes and flushed every second. The caller opens and closes W.
type SampleOutput struct {
	Format string
	W      io.Writer
	// TimeFormat is the CSV timestamps' format, by k6's name (its
	// timeFormat option; CSVTimeFormats): "" is unix.
	TimeFormat string
	// SaveInterval is how often the output is flushed (k6's
	// saveInterval); 0 is every second.
	SaveInterval time.Duration
}

// csvTimeFormats are the CSV output's timestamp formats by k6's names.
var csvTimeFormats = map[string]func(time.Time) string{
	"unix":         func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) },
	"unix_milli":   func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) },
	"unix_micro":   func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) },
	"unix_nano":    func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) },
	"rfc3339":      func(t time.Time) string { return t.Format(time.RFC3339) },
	"rfc3339_nano": func(t time.Time) string { return t.Format(time.RFC3339Nano) },
}

// CSVTimeFormats lists the CSV output's timestamp formats, sorted.
func CSVTimeFormats() []string { return slices.Sorted(maps.Keys(csvTimeFormats)) }

// CheckCSVTimeFormat reports whether name is a CSV timestamp format.
func CheckCSVTimeFormat(name string) error {
	if _, ok := csvTimeFormats[name]; !ok {
		return fmt.Errorf("time format %q: want one of %s", name, strings.Join(CSVTimeFormats(), ", "))
	}
	return nil
}

// csvSystemTags are k6's default system tags, sorted: the tag columns of
// its CSV output.
var csvSystemTags = []string{"check", "error", "error_code", "expected_response", "group", "method", "name",
	"proto", "scenario", "service", "status", "subproto", "tls_version", "url"}

// sampleFlushInterval is how often the sample outputs are flushed, as
// k6's outputs flush theirs.
const sampleFlushInterval = time.Second

// sampleStream writes every sample to the run's sample outputs. Safe for
// concurrent use.
type sampleStream struct {
	reg  *metrics.Registry
	ths  map[string][]assertions.Threshold // by metric name
	mu   sync.Mutex
	outs []*sampleWriter
	seen map[string]bool // metrics whose JSON "Metric" line was written
	err  error           // the first write error

	done chan struct{}
	wg   sync.WaitGroup
}

// sampleWriter is one output with its buffer.
type sampleWriter struct {
	format string
	buf    *bufio.Writer
	csv    *csv.Writer            // csv only
	stamp  func(time.Time) string // csv only: the timestamp column
	row    []string
	every  time.Duration // how often it is flushed
	last   time.Time     // when it was last flushed
}

// newSampleStream starts writing to outs (the CSV header is written at
// once) and flushing them every second; nil when outs is empty.
func newSampleStream(outs []SampleOutput, reg *metrics.Registry, ths []assertions.Threshold) (*sampleStream, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	s := &sampleStream{reg: reg, ths: map[string][]assertions.Threshold{}, seen: map[string]bool{}, done: make(chan struct{})}
	for _, th := range ths {
		s.ths[th.Metric] = append(s.ths[th.Metric], th)
	}
	tick := sampleFlushInterval
	for _, o := range outs {
		w := &sampleWriter{format: o.Format, buf: bufio.NewWriterSize(o.W, 64<<10), every: cmp.Or(o.SaveInterval, sampleFlushInterval), last: time.Now()}
		tick = min(tick, w.every)
		switch o.Format {
		case SampleFormatJSON:
		case SampleFormatCSV:
			if err := CheckCSVTimeFormat(cmp.Or(o.TimeFormat, "unix")); err != nil {
				return nil, fmt.Errorf("sample output csv: %w", err)
			}
			w.stamp = csvTimeFormats[cmp.Or(o.TimeFormat, "unix")]
			w.csv = csv.NewWriter(w.buf)
			header := append([]string{"metric_name", "timestamp", "metric_value"}, csvSystemTags...)
			w.row = make([]string, len(header)+2)
			if err := w.csv.Write(append(header, "extra_tags", "metadata")); err != nil {
				return nil, err
			}
			w.csv.Flush()
		default:
			return nil, fmt.Errorf("sample output %q: want %s", o.Format, strings.Join(SampleFormats, " or "))
		}
		if err := w.buf.Flush(); err != nil {
			return nil, err
		}
		s.outs = append(s.outs, w)
	}
	s.wg.Go(func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				s.flushDue(now)
			case <-s.done:
				return
			}
		}
	})
	return s, nil
}

// close stops the periodic flush and flushes what is left; it returns the
// first error any write met.
func (s *sampleStream) close() error {
	if s == nil {
		return nil
	}
	close(s.done)
	s.wg.Wait()
	s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// flush writes the buffered lines out.
func (s *sampleStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.outs {
		s.flushOne(w)
	}
}

// flushDue flushes the outputs whose interval has passed at now.
func (s *sampleStream) flushDue(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.outs {
		if now.Sub(w.last) >= w.every-w.every/10 { // a tick early by jitter still counts
			w.last = now
			s.flushOne(w)
		}
	}
}

// flushOne writes w's buffered lines out; s.mu is held.
func (s *sampleStream) flushOne(w *sampleWriter) {
	if w.csv != nil {
		w.csv.Flush()
		s.note(w.csv.Error())
	}
	s.note(w.buf.Flush())
}

// note keeps the first error.
func (s *sampleStream) note(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

// sample writes one sample of metric name at wall time at.
func (s *sampleStream) sample(name string, tags recording.Tags, v float64, at time.Time) {
	tm := sampleTags(tags)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.outs {
		switch w.format {
		case SampleFormatJSON:
			if !s.seen[name] {
				s.writeJSON(w, s.metricLine(name))
			}
			s.writeJSON(w, jsonPoint{Type: "Point", Metric: name, Data: jsonPointData{Time: at, Value: v, Tags: tm}})
		case SampleFormatCSV:
			s.writeCSV(w, name, tm, v, at)
		}
	}
	s.seen[name] = true
}

// jsonPoint and jsonMetric are the two lines of k6's JSON output, with
// its field order.
type jsonPoint struct {
	Metric string        `json:"metric"`
	Type   string        `json:"type"`
	Data   jsonPointData `json:"data"`
}

type jsonPointData struct {
	Time  time.Time         `json:"time"`
	Value float64           `json:"value"`
	Tags  map[string]string `json:"tags"`
}

type jsonMetric struct {
	Type   string         `json:"type"`
	Data   jsonMetricData `json:"data"`
	Metric string         `json:"metric"`
}

type jsonMetricData struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Contains   string          `json:"contains"`
	Thresholds []string        `json:"thresholds"`
	Submetrics []jsonSubmetric `json:"submetrics"`
}

type jsonSubmetric struct {
	Name   string            `json:"name"`
	Suffix string            `json:"suffix"`
	Tags   map[string]string `json:"tags"`
}

// metricLine is the "Metric" line of metric name: its k6 type, what its
// values are, its thresholds' expressions and the tag selections
// (submetrics) its thresholds name.
func (s *sampleStream) metricLine(name string) jsonMetric {
	d := jsonMetricData{Name: name, Type: "counter", Contains: "default", Thresholds: []string{}}
	if m, ok := s.reg.Lookup(name); ok {
		d.Type, d.Contains = m.Kind.String(), metricContains(m)
	}
	seenSub := map[string]bool{}
	for _, th := range s.ths[name] {
		key := th.Key()
		if key == name {
			d.Thresholds = append(d.Thresholds, k6ThresholdSource(th))
			continue
		}
		if seenSub[key] {
			continue
		}
		seenSub[key] = true
		sub := k6MetricName(th)
		suffix := strings.TrimSuffix(strings.TrimPrefix(sub, name+"{"), "}")
		tags := map[string]string{}
		for kv := range strings.SplitSeq(suffix, ",") {
			if k, v, ok := strings.Cut(kv, ":"); ok {
				tags[strings.Trim(strings.TrimSpace(k), `"'`)] = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
		d.Submetrics = append(d.Submetrics, jsonSubmetric{Name: sub, Suffix: suffix, Tags: tags})
	}
	return jsonMetric{Type: "Metric", Data: d, Metric: name}
}

// metricContains is k6's "contains" of m: time, data or default.
func metricContains(m metrics.Metric) string {
	switch {
	case m.IsTime():
		return "time"
	case m.Unit == metrics.UnitBytes:
		return "data"
	}
	return "default"
}

// writeJSON writes v as one line, without HTML escapes, as k6's encoder.
func (s *sampleStream) writeJSON(w *sampleWriter, v any) {
	enc := json.NewEncoder(w.buf)
	enc.SetEscapeHTML(false)
	s.note(enc.Encode(v))
}

// writeCSV writes one row of k6's CSV output: the system tags in their
// columns, the other tags as extra_tags (NAME=VALUE joined by &, sorted).
func (s *sampleStream) writeCSV(w *sampleWriter, name string, tags map[string]string, v float64, at time.Time) {
	row := w.row
	row[0], row[1], row[2] = name, w.stamp(at), strconv.FormatFloat(v, 'f', 6, 64)
	for i, t := range csvSystemTags {
		row[3+i] = tags[t]
	}
	var extra []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if _, sys := slices.BinarySearch(csvSystemTags, k); !sys {
			extra = append(extra, k+"="+tags[k])
		}
	}
	row[len(row)-2], row[len(row)-1] = strings.Join(extra, "&"), ""
	s.note(w.csv.Write(row))
}

// sampleTags are a sample's tags by name, as k6 tags it: its scenario and
// the script's and system tags, and an experiment's phase and fault.
func sampleTags(t recording.Tags) map[string]string {
	m := recording.ExtraMap(t.Extra)
	if m == nil {
		m = map[string]string{}
	}
	// The recorder keeps k6's name tag as the class.
	for k, v := range map[string]string{"scenario": t.Scenario, "phase": t.Phase, "fault": t.Fault, "name": t.Class, "endpoint": t.Endpoint} {
		if v != "" {
			m[k] = v
		}
	}
	// A request's name defaults to its URL (k6's url tag), which the
	// recorder does not keep apart.
	if n := m["name"]; m["url"] == "" && (strings.HasPrefix(n, "http://") || strings.HasPrefix(n, "https://")) {
		m["url"] = n
	}
	return m
}

// result writes an LLM request's samples: requests, and for one that
// ended, ttft, e2e, tpot, input and output tokens and error_rate, under
// the request's tags.
func (s *sampleStream) result(res *recording.Result, at time.Time) {
	s.sample("requests", res.Tags, 1, at)
	if res.Outcome == recording.OutcomeCancelled || res.Outcome == recording.OutcomeDropped {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if d, ok := res.TTFT(); ok {
		s.sample("ttft", res.Tags, ms(d), at)
	}
	if d, ok := res.E2E(); ok {
		s.sample("e2e", res.Tags, ms(d), at)
	}
	if d, ok := res.TPOT(); ok {
		s.sample("tpot", res.Tags, ms(d), at)
	}
	if res.Outcome == recording.OutcomeOK {
		s.sample("input_tokens", res.Tags, float64(res.InputTokens), at)
		s.sample("output_tokens", res.Tags, float64(res.OutputTokenCount()), at)
	}
	failed := 0.0
	if res.Outcome == recording.OutcomeFailed {
		failed = 1
	}
	s.sample("error_rate", res.Tags, failed, at)
}
