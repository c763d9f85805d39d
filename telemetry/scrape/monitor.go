package scrape

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample names, as they appear in Sample.Name.
const (
	KVCacheUsage    = "kv_cache_usage_perc"
	RequestsRunning = "num_requests_running"
	RequestsWaiting = "num_requests_waiting"
	Preemptions     = "num_preemptions_total"
	Up              = "up"
)

// Names lists the sample names a scrape can yield, in report order.
func Names() []string {
	return []string{KVCacheUsage, RequestsRunning, RequestsWaiting, Preemptions, Up}
}

// Source is one vLLM series and how it folds into a sample name.
type source struct {
	series string // the name on /metrics
	name   string // the Sample.Name
	max    bool   // fold label sets by max (else sum)
	alias  bool   // used only when the primary series of name is absent
}

var sources = []source{
	{"vllm:kv_cache_usage_perc", KVCacheUsage, true, false},
	{"vllm:gpu_cache_usage_perc", KVCacheUsage, true, true}, // vLLM before 0.10
	{"vllm:num_requests_running", RequestsRunning, false, false},
	{"vllm:num_requests_waiting", RequestsWaiting, false, false},
	{"vllm:num_preemptions_total", Preemptions, false, false},
}

// Defaults applied by New to zero Options fields.
const (
	DefaultInterval   = 2 * time.Second
	DefaultMaxSamples = 200_000 // 5 names × 1,800 scrapes an hour: over 20 endpoint-hours
	maxBody           = 16 << 20
)

// Sample is one value of the server's state.
type Sample struct {
	At       time.Duration `json:"at"`       // run clock offset of the scrape
	Endpoint string        `json:"endpoint"` // as given in Options.Endpoints
	Name     string        `json:"name"`     // one of Names()
	Value    float64       `json:"value"`
}

// Options configures a Monitor. Endpoints is required; a zero value
// elsewhere takes the default named beside it.
type Options struct {
	Endpoints  []string                         // base URLs or metrics URLs (see the package documentation)
	Interval   time.Duration                    // between scrapes (DefaultInterval)
	Timeout    time.Duration                    // one scrape (Interval)
	MaxSamples int                              // samples kept (DefaultMaxSamples)
	Now        func() time.Duration             // the run clock (time since New when nil)
	OnSample   func(Sample)                     // called from Run's goroutine for each sample
	OnError    func(endpoint string, err error) // called from Run's goroutine for each failed scrape
	Client     *http.Client                     // http.DefaultClient when nil
}

// Stats counts a Monitor's work.
type Stats struct {
	Scrapes  int // scrapes made, over all endpoints
	Failures int // scrapes that failed
	Dropped  int // samples dropped from the ring because it was full
}

// Monitor scrapes endpoints into Samples. Its methods are safe for
// concurrent use; Run is meant to be called once.
type Monitor struct {
	endpoints []string // as given
	urls      []string // the metrics URLs
	interval  time.Duration
	timeout   time.Duration
	now       func() time.Duration
	onSample  func(Sample)
	onError   func(string, error)
	client    *http.Client

	mu      sync.Mutex
	ring    []Sample
	limit   int // most samples kept
	next    int // ring write position once full
	full    bool
	stats   Stats
	lastErr map[string]error
}

// MetricsURL returns the metrics page of endpoint (see the package
// documentation).
func MetricsURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("endpoint %q: want http:// or https:// and a host", endpoint)
	}
	if !strings.HasSuffix(u.Path, "/metrics") {
		u.Path = "/metrics"
		u.RawPath = ""
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// Validate reports every problem of o at once. It fills in nothing.
func (o Options) Validate() error {
	var errs []error
	if len(o.Endpoints) == 0 {
		errs = append(errs, errors.New("monitor: no endpoints"))
	}
	for _, e := range o.Endpoints {
		if _, err := MetricsURL(e); err != nil {
			errs = append(errs, fmt.Errorf("monitor: %w", err))
		}
	}
	if o.Interval < 0 || o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("monitor: interval %v and timeout %v must not be negative", o.Interval, o.Timeout))
	}
	if o.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("monitor: max samples %d must not be negative", o.MaxSamples))
	}
	return errors.Join(errs...)
}

// New validates opts and returns a Monitor.
func New(opts Options) (*Monitor, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Monitor{
		endpoints: append([]string(nil), opts.Endpoints...),
		interval:  opts.Interval,
		timeout:   opts.Timeout,
		now:       opts.Now,
		onSample:  opts.OnSample,
		onError:   opts.OnError,
		client:    opts.Client,
		lastErr:   make(map[string]error),
	}
	for _, e := range m.endpoints {
		u, _ := MetricsURL(e) // checked by Validate
		m.urls = append(m.urls, u)
	}
	if m.interval == 0 {
		m.interval = DefaultInterval
	}
	if m.timeout == 0 {
		m.timeout = m.interval
	}
	m.limit = opts.MaxSamples
	if m.limit == 0 {
		m.limit = DefaultMaxSamples
	}
	m.ring = make([]Sample, 0, min(m.limit, 4096)) // grows up to limit
	if m.now == nil {
		start := time.Now()
		m.now = func() time.Duration { return time.Since(start) }
	}
	if m.client == nil {
		m.client = http.DefaultClient
	}
	return m, nil
}

// Run scrapes every endpoint at once, then every Interval, until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		m.ScrapeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ScrapeOnce scrapes every endpoint concurrently, keeps the samples, hands
// them to OnSample and returns them (endpoints in the order given). A
// failed scrape yields only an up 0 sample, and goes to OnError.
func (m *Monitor) ScrapeOnce(ctx context.Context) []Sample {
	type result struct {
		at   time.Duration
		vals map[string]float64
		err  error
	}
	res := make([]result, len(m.urls))
	var wg sync.WaitGroup
	for i, u := range m.urls {
		wg.Go(func() {
			at := m.now()
			vals, err := m.scrape(ctx, u)
			res[i] = result{at: at, vals: vals, err: err}
		})
	}
	wg.Wait()

	var out []Sample
	for i, r := range res {
		ep := m.endpoints[i]
		up := 1.0
		if r.err != nil {
			up = 0
		}
		for _, name := range Names() {
			if name == Up {
				out = append(out, Sample{At: r.at, Endpoint: ep, Name: Up, Value: up})
				continue
			}
			if v, ok := r.vals[name]; ok {
				out = append(out, Sample{At: r.at, Endpoint: ep, Name: name, Value: v})
			}
		}
	}
	m.keep(out)
	m.mu.Lock()
	for i, r := range res {
		m.stats.Scrapes++
		if r.err != nil {
			m.stats.Failures++
			m.lastErr[m.endpoints[i]] = r.err
		} else {
			delete(m.lastErr, m.endpoints[i])
		}
	}
	m.mu.Unlock()
	for i, r := range res {
		if r.err != nil && m.onError != nil && ctx.Err() == nil {
			m.onError(m.endpoints[i], r.err)
		}
	}
	if m.onSample != nil {
		for _, s := range out {
			m.onSample(s)
		}
	}
	return out
}

// keep appends samples to the ring.
func (m *Monitor) keep(samples []Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity := m.limit
	if capacity == 0 {
		m.stats.Dropped += len(samples)
		return
	}
	for _, s := range samples {
		if !m.full {
			m.ring = append(m.ring, s)
			if len(m.ring) == capacity {
				m.full = true
				m.next = 0
			}
			continue
		}
		m.ring[m.next] = s
		m.next = (m.next + 1) % capacity
		m.stats.Dropped++
	}
}

// Samples returns a copy of the samples kept, oldest first.
func (m *Monitor) Samples() []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.full {
		return append([]Sample(nil), m.ring...)
	}
	out := make([]Sample, 0, len(m.ring))
	out = append(out, m.ring[m.next:]...)
	return append(out, m.ring[:m.next]...)
}

// Stats returns the counts so far.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// LastError returns the error of endpoint's latest scrape, nil when it
// succeeded (or none was made).
func (m *Monitor) LastError(endpoint string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr[endpoint]
}

// scrape fetches and parses one metrics page.
func (m *Monitor) scrape(ctx context.Context, u string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return nil, fmt.Errorf("scrape %s: HTTP %d", u, resp.StatusCode)
	}
	vals, err := Parse(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	return vals, nil
}

// Parse reads a page in the Prometheus text format and returns the values
// of the series it knows, by sample name (see the package documentation);
// names the page lacks are absent from the map.
//
// Lines of other series are skipped before the text parser sees them: a
// vLLM page is mostly histograms this package does not read, and the
// parser would spend milliseconds on them every scrape.
func Parse(r io.Reader) (map[string]float64, error) {
	kept, err := keepKnown(r)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(kept))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := make(map[string]float64)
	for _, src := range sources {
		mf := mfs[src.series]
		if mf == nil || len(mf.GetMetric()) == 0 {
			continue
		}
		if _, have := out[src.name]; have && src.alias {
			continue
		}
		v := 0.0
		if src.max {
			v = math.Inf(-1)
		}
		for _, m := range mf.GetMetric() {
			x := value(mf.GetType(), m)
			if src.max {
				v = math.Max(v, x)
			} else {
				v += x
			}
		}
		out[src.name] = v
	}
	return out, nil
}

// keepKnown returns the lines of r that belong to a series in sources:
// their samples and their # TYPE and # HELP lines.
func keepKnown(r io.Reader) ([]byte, error) {
	var out []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBody)
	for sc.Scan() {
		line := sc.Bytes()
		name := line
		if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
			name = rest
		} else if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
			name = rest
		} else if len(line) > 0 && line[0] == '#' {
			continue
		}
		if i := bytes.IndexAny(name, "{ \t"); i >= 0 {
			name = name[:i]
		}
		if known(name) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out, sc.Err()
}

// known reports whether name is a series in sources.
func known(name []byte) bool {
	for _, src := range sources {
		if string(name) == src.series {
			return true
		}
	}
	return false
}

// value is a gauge's, counter's or untyped metric's value.
func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}
