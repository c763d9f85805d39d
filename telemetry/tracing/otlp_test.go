package tracing

import (
	"bytes"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestExportRequestDecodes: every field the hand-written encoder writes
// reads back through the generated OTLP types as the message the SDK
// would build, and the bytes are those proto.Marshal writes for it.
func TestExportRequestDecodes(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 300)) // a length past one varint byte
	sp := &span{
		traceID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		spanID:  []byte{1, 2, 3, 4, 5, 6, 7, 8},
		name:    SpanName, start: 1_700_000_000_123_456_789, end: 1_700_000_001_000_000_000,
		attrs: []attr{strAttr("llmchaos.outcome", "failed"), intAttr("llmchaos.seq", 0), intAttr("neg", -7),
			strAttr("long", long), {key: "gen_ai.response.finish_reasons", kind: attrStrings, array: []string{"stop", ""}}},
		events: []event{{name: "first_token", at: 5}, {name: "end", at: 6, attrs: []attr{intAttr("llmchaos.content_chunks", 3)}}},
		flags:  0x101, statusCode: statusCodeError, statusMsg: "HTTP 503",
	}
	plain := &span{traceID: make([]byte, 16), spanID: make([]byte, 8), name: SpanName, start: 1, end: 2, flags: 0x101}
	got := appendExportRequest(nil, []attr{strAttr("service.name", "llmchaos"), strAttr("run", "r1")}, scopeName,
		[]*span{sp, plain})

	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	sv := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "llmchaos"), str("run", "r1")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: scopeName},
			Spans: []*tracepb.Span{{
				TraceId: sp.traceID, SpanId: sp.spanID, Name: SpanName, Kind: tracepb.Span_SPAN_KIND_CLIENT,
				StartTimeUnixNano: sp.start, EndTimeUnixNano: sp.end,
				Attributes: []*commonpb.KeyValue{str("llmchaos.outcome", "failed"), num("llmchaos.seq", 0), num("neg", -7),
					str("long", long), {Key: "gen_ai.response.finish_reasons", Value: &commonpb.AnyValue{
						Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{sv("stop"), sv("")}}}}}},
				Events: []*tracepb.Span_Event{{Name: "first_token", TimeUnixNano: 5},
					{Name: "end", TimeUnixNano: 6, Attributes: []*commonpb.KeyValue{num("llmchaos.content_chunks", 3)}}},
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "HTTP 503"},
				Flags:  0x101,
			}, {
				TraceId: plain.traceID, SpanId: plain.spanID, Name: SpanName, Kind: tracepb.Span_SPAN_KIND_CLIENT,
				StartTimeUnixNano: 1, EndTimeUnixNano: 2, Status: &tracepb.Status{}, Flags: 0x101,
			}},
		}},
	}}}
	var dec coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(got, &dec); err != nil {
		t.Fatalf("generated types cannot read the request: %v", err)
	}
	if !proto.Equal(&dec, want) {
		t.Errorf("decoded request differs:\ngot  %v\nwant %v", &dec, want)
	}
	wantBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("bytes differ from proto.Marshal's:\ngot  %x\nwant %x", got, wantBytes)
	}
}
