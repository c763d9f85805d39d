package tracing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// SpanName is the name of every request span.
const SpanName = "llm.request"

// scopeName is the instrumentation scope of the spans.
const scopeName = "github.com/llmchaos/llmchaos/telemetry/tracing"

// Defaults applied by New to zero Options fields.
const (
	DefaultServiceName  = "llmchaos"
	DefaultBatchTimeout = 2 * time.Second
	DefaultMaxQueue     = 16384
	DefaultTimeout      = 10 * time.Second
)

// Options configures a Tracer. Endpoint and RunStart are required.
type Options struct {
	Endpoint string    // collector URL (--otlp-endpoint)
	RunStart time.Time // the wall-clock instant of the run clock's zero (recording.RunClock.Start)

	ServiceName  string            // resource service.name (DefaultServiceName)
	Attributes   map[string]string // more resource attributes, e.g. the run id
	Headers      map[string]string // sent with every export (authentication)
	SampleRatio  float64           // share of requests traced, in (0, 1]; 0: all
	BatchTimeout time.Duration     // longest a span waits before export (DefaultBatchTimeout)
	MaxQueue     int               // spans buffered before new ones are dropped (DefaultMaxQueue)
	Timeout      time.Duration     // one export request, retries included (DefaultTimeout)
}

// Validate reports every problem of o at once. It fills in nothing.
func (o Options) Validate() error {
	var errs []error
	if _, err := TracesURL(o.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if o.RunStart.IsZero() {
		errs = append(errs, errors.New("tracing: RunStart is zero; give the run clock's start"))
	}
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("tracing: sample ratio %v is not in (0, 1]", o.SampleRatio))
	}
	if o.BatchTimeout < 0 || o.Timeout < 0 || o.MaxQueue < 0 {
		errs = append(errs, errors.New("tracing: batch timeout, timeout and max queue must not be negative"))
	}
	return errors.Join(errs...)
}

// TracesURL completes a collector URL: without a path it gets /v1/traces.
func TracesURL(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("tracing: endpoint is empty; give the collector's OTLP/HTTP URL, e.g. http://127.0.0.1:4318")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("tracing: endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing: endpoint %q: want http:// or https:// and a host (OTLP over HTTP, port 4318)", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Tracer turns Results into spans. Record is safe for concurrent use.
//
// It is a small OTLP/HTTP span exporter of its own, in the wire format of
// the OpenTelemetry SDK's otlptracehttp (protobuf ExportTraceServiceRequest
// posted to /v1/traces, retried with backoff on 429, 502, 503 and 504 and
// on connection errors within Timeout), fed by a batcher (a span waits at
// most BatchTimeout, at most 512 go in one export, MaxQueue are buffered
// before new ones are dropped) and a TraceIDRatioBased sampler: the SDK,
// its exporter and the gRPC packages they bring weighed on every cold build
// of llmchaos for these few functions.
type Tracer struct {
	start    time.Time
	url      string
	headers  map[string]string
	timeout  time.Duration
	batch    time.Duration
	maxQueue int
	ratio    float64
	resource []attr
	client   *http.Client

	mu      sync.Mutex
	rnd     *rand.Rand
	queue   []*span
	flushes []chan struct{} // Flush calls waiting for the next export
	closed  bool
	kick    chan struct{}
	done    chan struct{}

	statsMu  sync.Mutex
	exported int
	failed   int
	last     error
}

// maxBatch is the most spans one export carries (the SDK's default).
const maxBatch = 512

// New validates opts and starts the exporter; nothing is sent until spans
// are recorded.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	u, _ := TracesURL(opts.Endpoint) // checked by Validate
	t := &Tracer{
		start: opts.RunStart, url: u, headers: opts.Headers, timeout: opts.Timeout, batch: opts.BatchTimeout,
		maxQueue: opts.MaxQueue, ratio: opts.SampleRatio, client: &http.Client{},
		rnd:  rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), rand.Uint64())),
		kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if t.timeout == 0 {
		t.timeout = DefaultTimeout
	}
	if t.batch == 0 {
		t.batch = DefaultBatchTimeout
	}
	if t.maxQueue == 0 {
		t.maxQueue = DefaultMaxQueue
	}
	name := opts.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []attr{strAttr("service.name", name)}
	for _, k := range slices.Sorted(maps.Keys(opts.Attributes)) {
		attrs = append(attrs, strAttr(k, opts.Attributes[k]))
	}
	t.resource = attrs
	go t.loop(context.WithoutCancel(ctx))
	return t, nil
}

// ids draws a trace id and a span id and reports whether the span is
// kept: as the SDK's TraceIDRatioBased, when the trace id's last 8 bytes,
// shifted right by one, are below ratio × 2^63.
func (t *Tracer) ids() (traceID, spanID []byte, keep bool) {
	traceID, spanID = make([]byte, 16), make([]byte, 8)
	t.mu.Lock()
	binary.BigEndian.PutUint64(traceID[:8], t.rnd.Uint64())
	binary.BigEndian.PutUint64(traceID[8:], t.rnd.Uint64())
	binary.BigEndian.PutUint64(spanID, t.rnd.Uint64()|1) // never all zero
	t.mu.Unlock()
	if t.ratio <= 0 || t.ratio >= 1 {
		return traceID, spanID, true
	}
	bound := uint64(t.ratio * (1 << 63))
	return traceID, spanID, binary.BigEndian.Uint64(traceID[8:])>>1 < bound
}

// Record builds the span of one Result and queues it for export. It does
// not retain res.
func (t *Tracer) Record(res *recording.Result) {
	traceID, spanID, keep := t.ids()
	if !keep {
		return // not sampled
	}
	begin := res.Sent
	if res.Outcome == recording.OutcomeDropped || begin == 0 {
		begin = res.Scheduled
	}
	end := max(res.End, begin)
	at := func(d time.Duration) uint64 { return uint64(t.start.Add(d).UnixNano()) }

	attrs := make([]attr, 0, 16)
	attrs = append(attrs, intAttr("llmchaos.seq", int64(res.Seq)), strAttr("llmchaos.outcome", res.Outcome.String()))
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, strAttr(k, v))
		}
	}
	str("llmchaos.request_id", res.RequestID)
	str("error.type", string(res.Class))
	str("llmchaos.endpoint", res.Tags.Endpoint)
	str("llmchaos.phase", res.Tags.Phase)
	str("llmchaos.fault", res.Tags.Fault)
	str("llmchaos.request_class", res.Tags.Class)
	if res.HTTPStatus > 0 {
		attrs = append(attrs, intAttr("http.response.status_code", int64(res.HTTPStatus)))
	}
	if res.Outcome != recording.OutcomeDropped {
		in := res.InputTokens
		if in == 0 {
			in = res.PromptTokensSent
		}
		attrs = append(attrs, intAttr("gen_ai.usage.input_tokens", int64(in)), intAttr("gen_ai.usage.output_tokens", int64(res.OutputTokenCount())))
	}
	if res.FinishReason != "" {
		attrs = append(attrs, attr{key: "gen_ai.response.finish_reasons", kind: attrStrings, array: []string{res.FinishReason}})
	}
	if res.Session != 0 {
		attrs = append(attrs, intAttr("llmchaos.session", int64(res.Session)), intAttr("llmchaos.turn", int64(res.Turn)))
	}
	sp := &span{
		traceID: traceID, spanID: spanID, name: SpanName,
		start: at(begin), end: at(end), attrs: attrs,
		flags: 0x100 | 0x01, // the parent is known to be remote or not (none), sampled
	}
	if res.FirstToken > 0 {
		sp.events = append(sp.events, event{name: "first_token", at: at(res.FirstToken)})
	}
	sp.events = append(sp.events, event{name: "end", at: at(end),
		attrs: []attr{intAttr("llmchaos.content_chunks", int64(res.ContentChunks))}})
	if res.Outcome == recording.OutcomeFailed {
		msg := res.Err
		if msg == "" {
			msg = string(res.Class)
		}
		sp.statusCode, sp.statusMsg = statusCodeError, msg
	}
	t.mu.Lock()
	if t.closed || len(t.queue) >= t.maxQueue {
		t.mu.Unlock()
		return // a full queue drops new spans, as the SDK's batcher
	}
	t.queue = append(t.queue, sp)
	full := len(t.queue) >= maxBatch
	t.mu.Unlock()
	if full {
		t.wake()
	}
}

func (t *Tracer) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// loop exports the queue every BatchTimeout, when a batch is full, and on
// Flush and Shutdown.
func (t *Tracer) loop(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(t.batch)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-t.kick:
		}
		for {
			t.mu.Lock()
			n := min(len(t.queue), maxBatch)
			spans := slices.Clone(t.queue[:n])
			t.queue = slices.Delete(t.queue, 0, n)
			more, closed := len(t.queue) > 0, t.closed
			var waiting []chan struct{}
			if !more {
				waiting, t.flushes = t.flushes, nil
			}
			t.mu.Unlock()
			if len(spans) > 0 {
				t.export(ctx, spans)
			}
			for _, w := range waiting {
				close(w)
			}
			if !more {
				if closed {
					return
				}
				break
			}
		}
	}
}

// export posts one batch, retrying as the SDK's exporter does, and counts
// the outcome.
func (t *Tracer) export(ctx context.Context, spans []*span) {
	err := t.post(ctx, appendExportRequest(nil, t.resource, scopeName, spans))
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	if err != nil {
		t.failed++
		t.last = fmt.Errorf("tracing: export of %d spans failed (%d exports failed so far): %w", len(spans), t.failed, err)
		return
	}
	t.exported += len(spans)
}

// post sends body, retrying on a connection error and on 429, 502, 503
// and 504 (honouring Retry-After) with backoff from 250 ms to 2 s, until
// Timeout.
func (t *Tracer) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	wait := 250 * time.Millisecond
	for {
		retry, after, err := t.postOnce(ctx, body)
		if err == nil || !retry {
			return err
		}
		if after <= 0 {
			after = wait
			wait = min(2*wait, 2*time.Second)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(after):
		}
	}
}

func (t *Tracer) postOnce(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("%s: HTTP %d: %s", t.url, resp.StatusCode, strings.TrimSpace(string(msg)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// Flush exports every span recorded so far and returns the last export
// failure of the run so far, if any.
func (t *Tracer) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return t.Err()
	}
	t.flushes = append(t.flushes, ch)
	t.mu.Unlock()
	t.wake()
	select {
	case <-ch:
	case <-ctx.Done():
		return fmt.Errorf("tracing: flush: %w", ctx.Err())
	}
	return t.Err()
}

// Err returns the last export failure, nil when none failed.
func (t *Tracer) Err() error {
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	return t.last
}

// Stats returns the spans exported and the exports that failed.
func (t *Tracer) Stats() (exported, failedExports int) {
	t.statsMu.Lock()
	defer t.statsMu.Unlock()
	return t.exported, t.failed
}

// Shutdown exports what is queued and stops the exporter; it returns the
// last export failure of the run, if any.
func (t *Tracer) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	already := t.closed
	t.closed = true
	t.mu.Unlock()
	if !already {
		t.wake()
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return errors.Join(fmt.Errorf("tracing: shutdown: %w", ctx.Err()), t.Err())
	}
	return t.Err()
}
