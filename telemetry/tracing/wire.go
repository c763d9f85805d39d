package tracing

import "google.golang.org/protobuf/encoding/protowire"

// The OTLP messages the exporter sends, encoded with protowire as
// proto.Marshal encodes the generated types of go.opentelemetry.io/proto/otlp
// (fields in field-number order, a set message field written even when
// empty): the generated packages and the reflection they need weighed on
// every cold build for the handful of fields written here. The test
// checks the bytes against proto.Marshal of the generated types.
//
// Field numbers, from opentelemetry/proto/{common,resource,trace}/v1.

const (
	// KeyValue
	fieldKVKey, fieldKVValue = 1, 2
	// AnyValue (oneof value)
	fieldAnyString, fieldAnyInt, fieldAnyArray = 1, 3, 5
	// ArrayValue
	fieldArrayValues = 1
	// Resource, InstrumentationScope
	fieldResourceAttributes, fieldScopeName = 1, 1
	// ResourceSpans, ScopeSpans
	fieldRSResource, fieldRSScopeSpans = 1, 2
	fieldSSScope, fieldSSSpans         = 1, 2
	// Span
	fieldSpanTraceID, fieldSpanSpanID, fieldSpanName, fieldSpanKind = 1, 2, 5, 6
	fieldSpanStart, fieldSpanEnd, fieldSpanAttributes               = 7, 8, 9
	fieldSpanEvents, fieldSpanStatus, fieldSpanFlags                = 11, 15, 16
	// Span.Event
	fieldEventTime, fieldEventName, fieldEventAttributes = 1, 2, 3
	// Status
	fieldStatusMessage, fieldStatusCode = 2, 3

	spanKindClient  = 3 // Span.SPAN_KIND_CLIENT
	statusCodeError = 2 // Status.STATUS_CODE_ERROR
)

// kv is an attribute: a string, an int, or an array of strings.
type kv struct {
	key  string
	kind byte // 's', 'i', 'a'
	s    string
	i    int64
	arr  []string
}

func strKV(k, v string) kv                { return kv{key: k, kind: 's', s: v} }
func intKV(k string, v int64) kv          { return kv{key: k, kind: 'i', i: v} }
func strArrayKV(k string, v ...string) kv { return kv{key: k, kind: 'a', arr: v} }

// event is a Span.Event.
type event struct {
	name  string
	at    uint64
	attrs []kv
}

// span is the part of an OTLP Span the tracer fills.
type span struct {
	traceID, spanID []byte
	name            string
	start, end      uint64
	attrs           []kv
	events          []event
	flags           uint32
	failed          bool   // status code Error (else unset)
	message         string // status message
}

// appendMessage appends field num holding the message that enc appends.
func appendMessage(b []byte, num protowire.Number, enc func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, enc(nil))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b // proto3: the default value is not written
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendAnyString(b []byte, s string) []byte {
	// A oneof member is written even when it holds its default.
	b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func (a kv) append(b []byte) []byte {
	b = appendString(b, fieldKVKey, a.key)
	return appendMessage(b, fieldKVValue, func(v []byte) []byte {
		switch a.kind {
		case 'i':
			v = protowire.AppendTag(v, fieldAnyInt, protowire.VarintType)
			return protowire.AppendVarint(v, uint64(a.i))
		case 'a':
			return appendMessage(v, fieldAnyArray, func(arr []byte) []byte {
				for _, s := range a.arr {
					arr = appendMessage(arr, fieldArrayValues, func(x []byte) []byte { return appendAnyString(x, s) })
				}
				return arr
			})
		default:
			return appendAnyString(v, a.s)
		}
	})
}

func appendKVs(b []byte, num protowire.Number, attrs []kv) []byte {
	for _, a := range attrs {
		b = appendMessage(b, num, a.append)
	}
	return b
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// encode is the span as an OTLP Span message.
func (s *span) encode(b []byte) []byte {
	if len(s.traceID) > 0 {
		b = protowire.AppendTag(b, fieldSpanTraceID, protowire.BytesType)
		b = protowire.AppendBytes(b, s.traceID)
	}
	if len(s.spanID) > 0 {
		b = protowire.AppendTag(b, fieldSpanSpanID, protowire.BytesType)
		b = protowire.AppendBytes(b, s.spanID)
	}
	b = appendString(b, fieldSpanName, s.name)
	b = protowire.AppendTag(b, fieldSpanKind, protowire.VarintType)
	b = protowire.AppendVarint(b, spanKindClient)
	b = appendFixed64(b, fieldSpanStart, s.start)
	b = appendFixed64(b, fieldSpanEnd, s.end)
	b = appendKVs(b, fieldSpanAttributes, s.attrs)
	for _, e := range s.events {
		b = appendMessage(b, fieldSpanEvents, func(eb []byte) []byte {
			eb = appendFixed64(eb, fieldEventTime, e.at)
			eb = appendString(eb, fieldEventName, e.name)
			return appendKVs(eb, fieldEventAttributes, e.attrs)
		})
	}
	b = appendMessage(b, fieldSpanStatus, func(st []byte) []byte {
		if !s.failed {
			return st // unset: an empty Status
		}
		st = appendString(st, fieldStatusMessage, s.message)
		st = protowire.AppendTag(st, fieldStatusCode, protowire.VarintType)
		return protowire.AppendVarint(st, statusCodeError)
	})
	if s.flags != 0 {
		b = protowire.AppendTag(b, fieldSpanFlags, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, s.flags)
	}
	return b
}

// encodeResourceSpans is an OTLP ResourceSpans message: the resource of
// resourceAttrs, one scope named scope holding spans.
func encodeResourceSpans(resourceAttrs []kv, scope string, spans []*span) []byte {
	b := appendMessage(nil, fieldRSResource, func(r []byte) []byte {
		return appendKVs(r, fieldResourceAttributes, resourceAttrs)
	})
	return appendMessage(b, fieldRSScopeSpans, func(ss []byte) []byte {
		ss = appendMessage(ss, fieldSSScope, func(sc []byte) []byte { return appendString(sc, fieldScopeName, scope) })
		for _, s := range spans {
			ss = appendMessage(ss, fieldSSSpans, s.encode)
		}
		return ss
	})
}
