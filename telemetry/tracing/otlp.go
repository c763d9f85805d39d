package tracing

import (
	"github.com/llmchaos/llmchaos/internal/promexpo/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP messages the tracer sends, as small structs encoded by hand
// with protowire (field numbers of opentelemetry-proto's
// collector/trace/v1, trace/v1, common/v1 and resource/v1), which keeps
// the generated OTLP packages and the protobuf runtime out of the binary.

// attr is one attribute: a string, an int64 or an array of strings.
type attr struct {
	key   string
	kind  attrKind
	str   string
	num   int64
	array []string
}

type attrKind uint8

const (
	attrString attrKind = iota
	attrInt
	attrStrings
)

func strAttr(k, v string) attr       { return attr{key: k, str: v} }
func intAttr(k string, v int64) attr { return attr{key: k, kind: attrInt, num: v} }

// event is a span event.
type event struct {
	name  string
	at    uint64 // Unix ns
	attrs []attr
}

// span is one span; the tracer's spans are all of kind client, with no
// parent.
type span struct {
	traceID, spanID []byte
	name            string
	start, end      uint64 // Unix ns
	attrs           []attr
	events          []event
	flags           uint32
	statusCode      int32 // 0 unset, 2 error
	statusMsg       string
}

// OTLP enum values.
const (
	spanKindClient  = 3
	statusCodeError = 2
)

// Field numbers.
const (
	fReqResourceSpans                  = 1 // ExportTraceServiceRequest
	fRSResource, fRSScopeSpans         = 1, 2
	fResourceAttrs                     = 1
	fSSScope, fSSSpans                 = 1, 2
	fScopeName                         = 1
	fSpanTraceID, fSpanSpanID          = 1, 2
	fSpanName, fSpanKind               = 5, 6
	fSpanStart, fSpanEnd               = 7, 8
	fSpanAttrs, fSpanEvents            = 9, 11
	fSpanStatus, fSpanFlags            = 15, 16
	fEventTime, fEventName, fEventAttr = 1, 2, 3
	fStatusMessage, fStatusCode        = 2, 3
	fKVKey, fKVValue                   = 1, 2
	fAnyString, fAnyInt, fAnyArray     = 1, 3, 5
	fArrayValues                       = 1
)

// appendExportRequest appends an ExportTraceServiceRequest holding one
// ResourceSpans: the resource's attributes, and one scope with spans.
func appendExportRequest(b []byte, resource []attr, scope string, spans []*span) []byte {
	return wire.AppendMessage(b, fReqResourceSpans, func(b []byte) []byte {
		b = wire.AppendMessage(b, fRSResource, func(b []byte) []byte { return appendAttrs(b, fResourceAttrs, resource) })
		return wire.AppendMessage(b, fRSScopeSpans, func(b []byte) []byte {
			b = wire.AppendMessage(b, fSSScope, func(b []byte) []byte { return wire.AppendString(b, fScopeName, scope) })
			for _, s := range spans {
				b = wire.AppendMessage(b, fSSSpans, s.append)
			}
			return b
		})
	})
}

func (s *span) append(b []byte) []byte {
	b = protowire.AppendTag(b, fSpanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, s.traceID)
	b = protowire.AppendTag(b, fSpanSpanID, protowire.BytesType)
	b = protowire.AppendBytes(b, s.spanID)
	b = wire.AppendString(b, fSpanName, s.name)
	b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
	b = protowire.AppendVarint(b, spanKindClient)
	b = wire.AppendFixed64(b, fSpanStart, s.start)
	b = wire.AppendFixed64(b, fSpanEnd, s.end)
	b = appendAttrs(b, fSpanAttrs, s.attrs)
	for _, e := range s.events {
		b = wire.AppendMessage(b, fSpanEvents, func(b []byte) []byte {
			b = wire.AppendFixed64(b, fEventTime, e.at)
			b = wire.AppendString(b, fEventName, e.name)
			return appendAttrs(b, fEventAttr, e.attrs)
		})
	}
	b = wire.AppendMessage(b, fSpanStatus, func(b []byte) []byte {
		if s.statusMsg != "" {
			b = wire.AppendString(b, fStatusMessage, s.statusMsg)
		}
		if s.statusCode != 0 {
			b = protowire.AppendTag(b, fStatusCode, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(s.statusCode))
		}
		return b
	})
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, s.flags)
}

// appendAttrs appends each attribute as a KeyValue in field num.
func appendAttrs(b []byte, num protowire.Number, attrs []attr) []byte {
	for _, a := range attrs {
		b = wire.AppendMessage(b, num, func(b []byte) []byte {
			b = wire.AppendString(b, fKVKey, a.key)
			return wire.AppendMessage(b, fKVValue, func(b []byte) []byte {
				switch a.kind {
				case attrInt:
					b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
					return protowire.AppendVarint(b, uint64(a.num))
				case attrStrings:
					return wire.AppendMessage(b, fAnyArray, func(b []byte) []byte {
						for _, v := range a.array {
							b = wire.AppendMessage(b, fArrayValues, func(b []byte) []byte { return wire.AppendString(b, fAnyString, v) })
						}
						return b
					})
				}
				return wire.AppendString(b, fAnyString, a.str)
			})
		})
	}
	return b
}
