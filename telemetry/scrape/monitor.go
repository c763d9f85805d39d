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

	"github.com/llmchaos/llmchaos/internal/promexpo"
)

// Sample names, as they appear in Sample.Name.
const (
	KVCacheUsage     = "kv_cache_usage_perc"
	RequestsRunning  = "num_requests_running"
	RequestsWaiting  = "num_requests_waiting"
	Preemptions      = "num_preemptions_total"
	PromptTokens     = "prompt_tokens_total"
	GenerationTokens = "generation_tokens_total"
	Up               = "up"
)

// Names lists the sample names a scrape can yield, in report order.
func Names() []string {
	return []string{KVCacheUsage, RequestsRunning, RequestsWaiting, Preemptions, PromptTokens, GenerationTokens, Up}
}

// Engines whose metrics pages Parse recognises, as Page.Engine and
// Monitor.Engine name them.
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineLlamaCpp = "llama.cpp"
	EngineTGI      = "tgi"
	EngineTriton   = "triton-trtllm"
	// EngineUnknown is a page that parsed but carries no series of any
	// engine above.
	EngineUnknown = "unknown"
)

// Engines lists the engines Parse recognises, in the order it tries them.
func Engines() []string {
	out := make([]string, len(engines))
	for i, e := range engines {
		out[i] = e.name
	}
	return out
}

// source is one series of an engine and how it folds into a sample name.
type source struct {
	series string    // the name on /metrics (a histogram's _sum line for token counts)
	label  [2]string // when set, only the label sets with this name and value
	name   string    // the Sample.Name
	max    bool      // fold label sets by max (else sum)
	alias  bool      // used only when an earlier source of name is absent
	per    *source   // when set, the value is this source's divided by per's (a ratio)
}

// engine is one engine's series.
type engine struct {
	name    string
	sources []source
}

// tritonKV selects one of the TensorRT-LLM backend's KV cache block gauges.
func tritonKV(typ string) source {
	return source{series: "nv_trt_llm_kv_cache_block_metrics", label: [2]string{"kv_cache_block_type", typ}, name: KVCacheUsage, max: true}
}

// tritonKVRatio is KV cache usage as used blocks / max blocks.
func tritonKVRatio() source {
	s, per := tritonKV("used"), tritonKV("max")
	s.alias, s.per = true, &per
	return s
}

// engines are tried in order; the first with a series on the page is the
// page's engine, and only its series are read. The mapping is the
// package documentation's table.
var engines = []engine{
	{EngineVLLM, []source{
		{series: "vllm:kv_cache_usage_perc", name: KVCacheUsage, max: true},
		{series: "vllm:gpu_cache_usage_perc", name: KVCacheUsage, max: true, alias: true}, // vLLM before 0.10
		{series: "vllm:num_requests_running", name: RequestsRunning},
		{series: "vllm:num_requests_waiting", name: RequestsWaiting},
		{series: "vllm:num_preemptions_total", name: Preemptions},
		{series: "vllm:prompt_tokens_total", name: PromptTokens},
		{series: "vllm:generation_tokens_total", name: GenerationTokens},
	}},
	{EngineSGLang, []source{
		{series: "sglang:token_usage", name: KVCacheUsage, max: true},
		{series: "sglang:num_running_reqs", name: RequestsRunning},
		{series: "sglang:num_queue_reqs", name: RequestsWaiting},
		{series: "sglang:num_retracted_requests_total", name: Preemptions},
		{series: "sglang:prompt_tokens_total", name: PromptTokens},
		{series: "sglang:generation_tokens_total", name: GenerationTokens},
	}},
	{EngineLlamaCpp, []source{
		{series: "llamacpp:kv_cache_usage_ratio", name: KVCacheUsage, max: true},
		{series: "llamacpp:requests_processing", name: RequestsRunning},
		{series: "llamacpp:requests_deferred", name: RequestsWaiting},
		{series: "llamacpp:prompt_tokens_total", name: PromptTokens},
		{series: "llamacpp:tokens_predicted_total", name: GenerationTokens},
	}},
	{EngineTGI, []source{
		{series: "tgi_batch_current_size", name: RequestsRunning},
		{series: "tgi_queue_size", name: RequestsWaiting},
		{series: "tgi_request_input_length_sum", name: PromptTokens},
		{series: "tgi_request_generated_tokens_sum", name: GenerationTokens},
	}},
	{EngineTriton, []source{
		tritonKV("fraction"),
		tritonKVRatio(), // backends without "fraction"
		{series: "nv_trt_llm_request_metrics", label: [2]string{"request_type", "active"}, name: RequestsRunning},
		{series: "nv_trt_llm_request_metrics", label: [2]string{"request_type", "waiting"}, name: RequestsWaiting},
		{series: "nv_llm_input_token_len_sum", name: PromptTokens},
		{series: "nv_llm_output_token_len_sum", name: GenerationTokens},
	}},
}

// knownSeries is every series name of every engine, for the line filter.
func knownSeries() map[string]bool {
	m := make(map[string]bool)
	for _, e := range engines {
		for _, s := range e.sources {
			m[s.series] = true
		}
	}
	return m
}

// Defaults applied by New to zero Options fields.
const (
	DefaultInterval   = 2 * time.Second
	DefaultMaxSamples = 200_000 // 7 names × 1,800 scrapes an hour: over 15 endpoint-hours
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
	// OnEngine is called from Run's goroutine when a scrape of endpoint
	// recognises another engine than the one before (the first
	// successful scrape included): one of Engines() or EngineUnknown.
	OnEngine func(endpoint, engine string)
	Client   *http.Client // http.DefaultClient when nil
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
	onEngine  func(string, string)
	client    *http.Client

	mu      sync.Mutex
	ring    []Sample
	limit   int // most samples kept
	next    int // ring write position once full
	full    bool
	stats   Stats
	lastErr map[string]error
	engine  map[string]string // by endpoint: the engine its latest good scrape carried
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
		onEngine:  opts.OnEngine,
		client:    opts.Client,
		lastErr:   make(map[string]error),
		engine:    make(map[string]string),
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
		page Page
		err  error
	}
	res := make([]result, len(m.urls))
	var wg sync.WaitGroup
	for i, u := range m.urls {
		wg.Go(func() {
			at := m.now()
			page, err := m.scrape(ctx, u)
			res[i] = result{at: at, page: page, err: err}
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
			if v, ok := r.page.Values[name]; ok {
				out = append(out, Sample{At: r.at, Endpoint: ep, Name: name, Value: v})
			}
		}
	}
	m.keep(out)
	changed := make([]bool, len(res)) // the endpoint's engine changed
	m.mu.Lock()
	for i, r := range res {
		ep := m.endpoints[i]
		m.stats.Scrapes++
		if r.err != nil {
			m.stats.Failures++
			m.lastErr[ep] = r.err
			continue
		}
		delete(m.lastErr, ep)
		if m.engine[ep] != r.page.Engine {
			m.engine[ep] = r.page.Engine
			changed[i] = true
		}
	}
	m.mu.Unlock()
	for i, r := range res {
		if changed[i] && m.onEngine != nil {
			m.onEngine(m.endpoints[i], r.page.Engine)
		}
	}
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

// Engine returns the engine that endpoint's latest successful scrape
// recognised (one of Engines() or EngineUnknown), "" before any.
func (m *Monitor) Engine(endpoint string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.engine[endpoint]
}

// LastError returns the error of endpoint's latest scrape, nil when it
// succeeded (or none was made).
func (m *Monitor) LastError(endpoint string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr[endpoint]
}

// scrape fetches and parses one metrics page.
func (m *Monitor) scrape(ctx context.Context, u string) (Page, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Page{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := m.client.Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("scrape %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return Page{}, fmt.Errorf("scrape %s: HTTP %d", u, resp.StatusCode)
	}
	page, err := Parse(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Page{}, fmt.Errorf("scrape %s: %w", u, err)
	}
	return page, nil
}

// Page is what Parse read from one metrics page.
type Page struct {
	// Engine is the engine whose series the page carries (one of
	// Engines()), or EngineUnknown when it has none of them.
	Engine string
	// Values are the sample values by sample name; names the page lacks
	// are absent.
	Values map[string]float64
}

// Parse reads a page in the Prometheus text format, recognises its engine
// and returns the values of that engine's series by sample name (see the
// package documentation).
//
// Lines of other series are skipped before the text parser sees them: a
// vLLM page is mostly histograms this package does not read, and the
// parser would spend milliseconds on them every scrape.
func Parse(r io.Reader) (Page, error) {
	kept, err := keepKnown(r, knownSeries())
	if err != nil {
		return Page{}, fmt.Errorf("read metrics: %w", err)
	}
	fams, err := promexpo.Parse(bytes.NewReader(kept))
	if err != nil {
		return Page{}, fmt.Errorf("parse metrics: %w", err)
	}
	mfs := make(map[string]*promexpo.Family, len(fams))
	for i := range fams {
		mfs[fams[i].Name] = &fams[i]
	}
	page := Page{Engine: EngineUnknown, Values: make(map[string]float64)}
	for _, e := range engines {
		if !e.present(mfs) {
			continue
		}
		page.Engine = e.name
		for _, src := range e.sources {
			if _, have := page.Values[src.name]; have && src.alias {
				continue
			}
			v, ok := src.fold(mfs)
			if !ok {
				continue
			}
			if src.per != nil {
				d, ok := src.per.fold(mfs)
				if !ok || d == 0 {
					continue
				}
				v /= d
			}
			page.Values[src.name] = v
		}
		break
	}
	return page, nil
}

// present reports whether the page has any series of e.
func (e engine) present(mfs map[string]*promexpo.Family) bool {
	for _, src := range e.sources {
		if mf := mfs[src.series]; mf != nil && len(mf.Metrics) > 0 {
			return true
		}
	}
	return false
}

// fold returns src's value on the page, its label sets folded; ok is false
// when no label set matches.
func (src source) fold(mfs map[string]*promexpo.Family) (v float64, ok bool) {
	mf := mfs[src.series]
	if mf == nil {
		return 0, false
	}
	if src.max {
		v = math.Inf(-1)
	}
	for i := range mf.Metrics {
		m := &mf.Metrics[i]
		if src.label[0] != "" && !hasLabel(m, src.label[0], src.label[1]) {
			continue
		}
		if m.Histogram != nil {
			continue // a summary or histogram declared under a gauge's name
		}
		x := m.Value
		if src.max {
			v = math.Max(v, x)
		} else {
			v += x
		}
		ok = true
	}
	if !ok {
		return 0, false
	}
	return v, true
}

// hasLabel reports whether m has the label name="value".
func hasLabel(m *promexpo.Metric, name, value string) bool {
	v, ok := m.Label(name)
	return ok && v == value
}

// keepKnown returns the lines of r that belong to a series in known:
// their samples and their # TYPE and # HELP lines.
func keepKnown(r io.Reader, known map[string]bool) ([]byte, error) {
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
		if known[string(name)] {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out, sc.Err()
}
