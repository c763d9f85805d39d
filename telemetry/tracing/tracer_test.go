package tracing

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an in-test OTLP/HTTP receiver: it decodes each protobuf
// ExportTraceServiceRequest and keeps the spans with their resource.
type collector struct {
	mu       sync.Mutex
	paths    []string
	ctypes   []string
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
	errs     []error
	srv      *httptest.Server
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.ctypes = append(c.ctypes, r.Header.Get("Content-Type"))
	c.errs = append(c.errs, err)
	for _, rs := range req.GetResourceSpans() {
		c.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = x.IntValue
		case *commonpb.AnyValue_ArrayValue:
			var ss []string
			for _, e := range x.ArrayValue.GetValues() {
				ss = append(ss, e.GetStringValue())
			}
			m[kv.GetKey()] = strings.Join(ss, ",")
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

func TestSpansReachCollector(t *testing.T) {
	col := newCollector(t)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tr, err := New(t.Context(), Options{Endpoint: col.srv.URL, RunStart: start,
		Attributes: map[string]string{"llmchaos.run_id": "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	ok := &recording.Result{
		Seq: 7, RequestID: "req-7", Tags: recording.Tags{Phase: "fault", Fault: "kill-one", Class: "chat", Endpoint: "http://127.0.0.1:8000/v1"},
		Scheduled: time.Second, Dequeued: time.Second, Sent: time.Second + time.Millisecond,
		FirstToken: 1300 * time.Millisecond, End: 2 * time.Second,
		Outcome: recording.OutcomeOK, HTTPStatus: 200, InputTokens: 120, OutputTokens: 64, UsageReported: true,
		ContentChunks: 64, FinishReason: "length", Session: 3, Turn: 1,
	}
	failed := &recording.Result{
		Seq: 8, RequestID: "req-8", Scheduled: 2 * time.Second, Sent: 2 * time.Second, End: 2500 * time.Millisecond,
		Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP5xx, HTTPStatus: 503, Err: "HTTP 503: engine dead",
		PromptTokensSent: 99,
	}
	dropped := &recording.Result{Seq: 9, Scheduled: 3 * time.Second, Outcome: recording.OutcomeDropped}
	for _, r := range []*recording.Result{ok, failed, dropped} {
		tr.Record(r)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	for i, err := range col.errs {
		if err != nil {
			t.Errorf("export %d did not decode: %v", i, err)
		}
		if col.paths[i] != "/v1/traces" || col.ctypes[i] != "application/x-protobuf" {
			t.Errorf("export %d: path %s, content type %s; want /v1/traces, protobuf", i, col.paths[i], col.ctypes[i])
		}
	}
	if len(col.spans) != 3 {
		t.Fatalf("got %d spans, want 3", len(col.spans))
	}
	res := attrMap(col.resource)
	if res["service.name"] != "llmchaos" || res["llmchaos.run_id"] != "r1" {
		t.Errorf("resource: got %v", res)
	}
	bySeq := map[int64]*tracepb.Span{}
	for _, s := range col.spans {
		if s.GetName() != SpanName {
			t.Errorf("span name: got %q, want %q", s.GetName(), SpanName)
		}
		if s.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("span kind: got %v, want client", s.GetKind())
		}
		bySeq[attrMap(s.GetAttributes())["llmchaos.seq"].(int64)] = s
	}
	at := func(d time.Duration) uint64 { return uint64(start.Add(d).UnixNano()) }

	t.Run("ok", func(t *testing.T) {
		s := bySeq[7]
		if s.GetStartTimeUnixNano() != at(ok.Sent) || s.GetEndTimeUnixNano() != at(ok.End) {
			t.Errorf("times: got %d..%d, want %d..%d", s.GetStartTimeUnixNano(), s.GetEndTimeUnixNano(), at(ok.Sent), at(ok.End))
		}
		want := map[string]any{
			"llmchaos.request_id": "req-7", "llmchaos.outcome": "ok", "http.response.status_code": int64(200),
			"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(64),
			"gen_ai.response.finish_reasons": "length", "llmchaos.endpoint": "http://127.0.0.1:8000/v1",
			"llmchaos.phase": "fault", "llmchaos.fault": "kill-one", "llmchaos.request_class": "chat",
			"llmchaos.session": int64(3), "llmchaos.turn": int64(1),
		}
		got := attrMap(s.GetAttributes())
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: got %v, want %v", k, got[k], w)
			}
		}
		if _, has := got["error.type"]; has {
			t.Error("ok span has error.type")
		}
		ev := s.GetEvents()
		if len(ev) != 2 || ev[0].GetName() != "first_token" || ev[1].GetName() != "end" {
			t.Fatalf("events: got %v, want first_token, end", ev)
		}
		if ev[0].GetTimeUnixNano() != at(ok.FirstToken) || ev[1].GetTimeUnixNano() != at(ok.End) {
			t.Errorf("event times: got %d, %d", ev[0].GetTimeUnixNano(), ev[1].GetTimeUnixNano())
		}
		if got := attrMap(ev[1].GetAttributes())["llmchaos.content_chunks"]; got != int64(64) {
			t.Errorf("end event content_chunks: got %v, want 64", got)
		}
		if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_UNSET {
			t.Errorf("status: got %v, want unset", s.GetStatus())
		}
	})
	t.Run("failed", func(t *testing.T) {
		s := bySeq[8]
		got := attrMap(s.GetAttributes())
		if got["error.type"] != "http_5xx" || got["llmchaos.outcome"] != "failed" ||
			got["http.response.status_code"] != int64(503) || got["gen_ai.usage.input_tokens"] != int64(99) {
			t.Errorf("attributes: got %v", got)
		}
		if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.GetStatus().GetMessage() != failed.Err {
			t.Errorf("status: got %v, want error %q", s.GetStatus(), failed.Err)
		}
		if ev := s.GetEvents(); len(ev) != 1 || ev[0].GetName() != "end" {
			t.Errorf("events: got %v, want only end (no first token)", ev)
		}
	})
	t.Run("dropped", func(t *testing.T) {
		s := bySeq[9]
		if s.GetStartTimeUnixNano() != at(dropped.Scheduled) || s.GetEndTimeUnixNano() != at(dropped.Scheduled) {
			t.Errorf("times: got %d..%d, want both %d", s.GetStartTimeUnixNano(), s.GetEndTimeUnixNano(), at(dropped.Scheduled))
		}
		if got := attrMap(s.GetAttributes()); got["llmchaos.outcome"] != "dropped" {
			t.Errorf("outcome: got %v", got["llmchaos.outcome"])
		}
	})
}

func TestExplicitPathAndFlush(t *testing.T) {
	col := newCollector(t)
	tr, err := New(t.Context(), Options{Endpoint: col.srv.URL + "/custom/traces", RunStart: time.Now(),
		BatchTimeout: time.Hour}) // only Flush sends
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(t.Context()) })
	tr.Record(&recording.Result{Scheduled: 1, Sent: 1, End: 2, Outcome: recording.OutcomeOK})
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.paths) != 1 || col.paths[0] != "/custom/traces" || len(col.spans) != 1 {
		t.Errorf("got paths %v and %d spans, want one export to /custom/traces", col.paths, len(col.spans))
	}
	if exported, failed := tr.Stats(); exported != 1 || failed != 0 {
		t.Errorf("stats: got %d exported, %d failed", exported, failed)
	}
}

func TestExportFailureSurfaces(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens: refused
	tr, err := New(t.Context(), Options{Endpoint: endpoint, RunStart: time.Now(), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tr.Record(&recording.Result{Scheduled: 1, Sent: 1, End: 2, Outcome: recording.OutcomeOK})
	err = tr.Shutdown(t.Context())
	if err == nil || !strings.Contains(err.Error(), "export of 1 spans failed") {
		t.Errorf("Shutdown: got %v, want the export failure", err)
	}
	if _, failed := tr.Stats(); failed != 1 {
		t.Errorf("failed exports: got %d, want 1", failed)
	}
}

func TestSampleRatio(t *testing.T) {
	col := newCollector(t)
	tr, err := New(t.Context(), Options{Endpoint: col.srv.URL, RunStart: time.Now(), SampleRatio: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		tr.Record(&recording.Result{Seq: uint64(i), Scheduled: 1, Sent: 1, End: 2, Outcome: recording.OutcomeOK})
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	got := len(col.spans)
	col.mu.Unlock()
	// Binomial(2000, 0.25): mean 500, sd 19.4; ±100 is over 5 sd.
	if got < 400 || got > 600 {
		t.Errorf("sampled %d of %d at ratio 0.25, want about 500", got, n)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"valid", Options{Endpoint: "http://127.0.0.1:4318", RunStart: time.Now()}, nil},
		{"all wrong", Options{Endpoint: "grpc://127.0.0.1:4317", SampleRatio: 2, MaxQueue: -1},
			[]string{"want http:// or https://", "RunStart is zero", "sample ratio 2", "must not be negative"}},
		{"empty endpoint", Options{RunStart: time.Now()}, []string{"endpoint is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 && err != nil {
				t.Errorf("got %v, want nil", err)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("got %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestTracesURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example/api/traces", "https://otel.example/api/traces"},
	}
	for _, tt := range tests {
		if got, err := TracesURL(tt.in); err != nil || got != tt.want {
			t.Errorf("TracesURL(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func BenchmarkRecord(b *testing.B) {
	col := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(col.serve))
	defer srv.Close()
	tr, err := New(b.Context(), Options{Endpoint: srv.URL, RunStart: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	r := &recording.Result{RequestID: "req-1", Tags: recording.Tags{Phase: "baseline", Class: "chat", Endpoint: "http://127.0.0.1:8000/v1"},
		Scheduled: time.Second, Sent: time.Second, FirstToken: 1100 * time.Millisecond, End: 2 * time.Second,
		Outcome: recording.OutcomeOK, HTTPStatus: 200, InputTokens: 100, OutputTokens: 128, UsageReported: true, FinishReason: "stop"}
	b.ReportAllocs()
	for b.Loop() {
		tr.Record(r)
	}
	b.StopTimer()
	if err := tr.Shutdown(b.Context()); err != nil {
		b.Fatal(err)
	}
	exported, _ := tr.Stats()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/span")
	b.Logf("recorded %d spans, exported %d (the rest dropped by a full queue)", b.N, exported)
}
