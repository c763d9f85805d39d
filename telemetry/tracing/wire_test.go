package tracing

import (
	"bytes"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestWireMatchesGeneratedTypes: encodeResourceSpans writes the bytes that
// proto.Marshal writes for the same ResourceSpans built from the generated
// OTLP types (deterministic marshalling), for an ok span and a failed one
// with every kind of attribute the tracer writes, including empty values.
func TestWireMatchesGeneratedTypes(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	tid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sid := []byte{0xff, 0, 0, 0, 0, 0, 0, 1}

	ours := []*span{
		{traceID: tid, spanID: sid, name: SpanName, start: 1_700_000_000_000_000_000, end: 1_700_000_001_500_000_000,
			attrs: []kv{intKV("llmchaos.seq", 0), strKV("llmchaos.outcome", "ok"), intKV("neg", -5),
				strArrayKV("gen_ai.response.finish_reasons", "stop")},
			events: []event{{name: "first_token", at: 1_700_000_000_200_000_000},
				{name: "end", at: 1_700_000_001_500_000_000, attrs: []kv{intKV("llmchaos.content_chunks", 42)}}},
			flags: 0x101},
		{traceID: tid, spanID: sid, name: SpanName, start: 5, end: 0,
			attrs:  []kv{strKV("empty", ""), strArrayKV("arr", "", "b")},
			events: []event{{name: "end"}}, flags: 0x101, failed: true, message: "http 503: overloaded"},
		{traceID: tid, spanID: sid, name: SpanName, failed: true, flags: 0x101},
	}
	theirs := []*tracepb.Span{
		{TraceId: tid, SpanId: sid, Name: SpanName, Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: 1_700_000_000_000_000_000, EndTimeUnixNano: 1_700_000_001_500_000_000,
			Attributes: []*commonpb.KeyValue{num("llmchaos.seq", 0), str("llmchaos.outcome", "ok"), num("neg", -5),
				{Key: "gen_ai.response.finish_reasons", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{
					ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
						{Value: &commonpb.AnyValue_StringValue{StringValue: "stop"}}}}}}}},
			Events: []*tracepb.Span_Event{{Name: "first_token", TimeUnixNano: 1_700_000_000_200_000_000},
				{Name: "end", TimeUnixNano: 1_700_000_001_500_000_000,
					Attributes: []*commonpb.KeyValue{num("llmchaos.content_chunks", 42)}}},
			Status: &tracepb.Status{}, Flags: 0x101},
		{TraceId: tid, SpanId: sid, Name: SpanName, Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 5,
			Attributes: []*commonpb.KeyValue{str("empty", ""),
				{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{
					ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
						{Value: &commonpb.AnyValue_StringValue{StringValue: ""}},
						{Value: &commonpb.AnyValue_StringValue{StringValue: "b"}}}}}}}},
			Events: []*tracepb.Span_Event{{Name: "end"}}, Flags: 0x101,
			Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "http 503: overloaded"}},
		{TraceId: tid, SpanId: sid, Name: SpanName, Kind: tracepb.Span_SPAN_KIND_CLIENT, Flags: 0x101,
			Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}},
	}
	res := []kv{strKV("service.name", "llmchaos"), strKV("deployment.environment", "")}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&tracepb.ResourceSpans{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			str("service.name", "llmchaos"), str("deployment.environment", "")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: scopeName}, Spans: theirs}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := encodeResourceSpans(res, scopeName, ours)
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeResourceSpans differs from proto.Marshal of the OTLP types:\ngot  %x\nwant %x", got, want)
	}
}
