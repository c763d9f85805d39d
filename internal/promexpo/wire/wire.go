// Package wire holds the protobuf field appenders that promexpo's
// exposition format and the telemetry's OTLP spans share, on
// google.golang.org/protobuf/encoding/protowire (the one package of the
// protobuf module the binary compiles).
package wire

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// AppendMessage appends field num holding the message that fill appends:
// the body is written first and moved right to make room for its length,
// so that no size has to be computed ahead.
func AppendMessage(b []byte, num protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = fill(b)
	n := len(b) - at
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size)...)
	copy(b[at+size:], b[at:at+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

// AppendString appends string field num.
func AppendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// AppendDouble appends double field num.
func AppendDouble(b []byte, num protowire.Number, f float64) []byte {
	return AppendFixed64(b, num, math.Float64bits(f))
}

// AppendFixed64 appends fixed64 field num.
func AppendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// AppendUvarint appends varint field num (uint64, or int64 as its two's
// complement, as protobuf writes int64).
func AppendUvarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
