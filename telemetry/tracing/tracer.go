package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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
type Tracer struct {
	start  time.Time
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	exp    *countingExporter
}

// New validates opts and starts the exporter; nothing is sent until spans
// are recorded.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	u, _ := TracesURL(opts.Endpoint) // checked by Validate
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	httpOpts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(u),
		otlptracehttp.WithTimeout(timeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: 250 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: timeout,
		}),
	}
	if len(opts.Headers) > 0 {
		httpOpts = append(httpOpts, otlptracehttp.WithHeaders(opts.Headers))
	}
	inner, err := otlptracehttp.New(ctx, httpOpts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	exp := &countingExporter{inner: inner}

	name := opts.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	for k, v := range opts.Attributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	batchTimeout := opts.BatchTimeout
	if batchTimeout == 0 {
		batchTimeout = DefaultBatchTimeout
	}
	maxQueue := opts.MaxQueue
	if maxQueue == 0 {
		maxQueue = DefaultMaxQueue
	}
	sampler := sdktrace.AlwaysSample()
	if opts.SampleRatio > 0 && opts.SampleRatio < 1 {
		sampler = sdktrace.TraceIDRatioBased(opts.SampleRatio)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sampler),
		sdktrace.WithBatcher(exp,
			sdktrace.WithBatchTimeout(batchTimeout),
			sdktrace.WithMaxQueueSize(maxQueue),
			sdktrace.WithMaxExportBatchSize(min(maxQueue, 512)),
			sdktrace.WithExportTimeout(timeout+time.Second),
		),
	)
	return &Tracer{start: opts.RunStart, tp: tp, tracer: tp.Tracer(scopeName), exp: exp}, nil
}

// Record builds the span of one Result and queues it for export. It does
// not retain res.
func (t *Tracer) Record(res *recording.Result) {
	begin := res.Sent
	if res.Outcome == recording.OutcomeDropped || begin == 0 {
		begin = res.Scheduled
	}
	end := max(res.End, begin)

	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		attribute.Int64("llmchaos.seq", int64(res.Seq)),
		attribute.String("llmchaos.outcome", res.Outcome.String()),
	)
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	str("llmchaos.request_id", res.RequestID)
	str("error.type", string(res.Class))
	str("llmchaos.endpoint", res.Tags.Endpoint)
	str("llmchaos.phase", res.Tags.Phase)
	str("llmchaos.fault", res.Tags.Fault)
	str("llmchaos.request_class", res.Tags.Class)
	if res.HTTPStatus > 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", res.HTTPStatus))
	}
	if res.Outcome != recording.OutcomeDropped {
		in := res.InputTokens
		if in == 0 {
			in = res.PromptTokensSent
		}
		attrs = append(attrs,
			attribute.Int("gen_ai.usage.input_tokens", in),
			attribute.Int("gen_ai.usage.output_tokens", res.OutputTokenCount()),
		)
	}
	if res.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{res.FinishReason}))
	}
	if res.Session != 0 {
		attrs = append(attrs, attribute.Int64("llmchaos.session", int64(res.Session)), attribute.Int("llmchaos.turn", res.Turn))
	}

	_, span := t.tracer.Start(context.Background(), SpanName,
		trace.WithTimestamp(t.start.Add(begin)),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...),
	)
	if !span.IsRecording() {
		return // not sampled
	}
	if res.FirstToken > 0 {
		span.AddEvent("first_token", trace.WithTimestamp(t.start.Add(res.FirstToken)))
	}
	span.AddEvent("end", trace.WithTimestamp(t.start.Add(end)),
		trace.WithAttributes(attribute.Int("llmchaos.content_chunks", res.ContentChunks)))
	if res.Outcome == recording.OutcomeFailed {
		msg := res.Err
		if msg == "" {
			msg = string(res.Class)
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End(trace.WithTimestamp(t.start.Add(end)))
}

// Flush exports every span recorded so far and returns the last export
// failure of the run so far, if any.
func (t *Tracer) Flush(ctx context.Context) error {
	if err := t.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return t.exp.Err()
}

// Err returns the last export failure, nil when none failed.
func (t *Tracer) Err() error { return t.exp.Err() }

// Stats returns the spans exported and the exports that failed.
func (t *Tracer) Stats() (exported, failedExports int) { return t.exp.stats() }

// Shutdown exports what is queued and stops the exporter; it returns the
// last export failure of the run, if any.
func (t *Tracer) Shutdown(ctx context.Context) error {
	err := t.tp.Shutdown(ctx)
	if err != nil {
		err = fmt.Errorf("tracing: shutdown: %w", err)
	}
	return errors.Join(err, t.exp.Err())
}

// countingExporter records export failures instead of passing them to the
// global OpenTelemetry error handler.
type countingExporter struct {
	inner    sdktrace.SpanExporter
	mu       sync.Mutex
	exported int
	failed   int
	last     error
}

var _ sdktrace.SpanExporter = (*countingExporter)(nil)

// ExportSpans exports through the OTLP exporter and counts the outcome.
func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.inner.ExportSpans(ctx, spans)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed++
		c.last = fmt.Errorf("tracing: export of %d spans failed (%d exports failed so far): %w", len(spans), c.failed, err)
		return nil // counted; the batch processor would only log it globally
	}
	c.exported += len(spans)
	return nil
}

// Shutdown stops the OTLP exporter.
func (c *countingExporter) Shutdown(ctx context.Context) error { return c.inner.Shutdown(ctx) }

// Err returns the last failure.
func (c *countingExporter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *countingExporter) stats() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exported, c.failed
}
