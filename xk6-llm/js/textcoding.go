package js

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/grafana/sobek"
)

// The TextEncoder and TextDecoder globals of the WHATWG Encoding standard,
// as k6 has them (globals since k6 v2.2, no import): TextEncoder encodes
// UTF-8 (encode, encodeInto); TextDecoder decodes UTF-8, UTF-16LE and
// UTF-16BE, with the fatal and ignoreBOM options and decode's stream
// option. Invalid input decodes to U+FFFD as the standard says (one per
// maximal invalid subsequence), or throws a TypeError when fatal.

// decoderLabels are the labels of the decoder's encodings, by canonical
// name (the standard's table).
var decoderLabels = map[string][]string{
	"utf-8":    {"unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"},
	"utf-16le": {"csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le"},
	"utf-16be": {"unicodefffe", "utf-16be"},
}

// newTextEncoderClass is the TextEncoder constructor.
func newTextEncoderClass(vu *VU) sobek.Value {
	rt := vu.rt
	u8 := rt.Get("Uint8Array")
	newU8 := func(b []byte) sobek.Value {
		o, err := rt.New(u8, rt.ToValue(rt.NewArrayBuffer(b)))
		if err != nil {
			panic(err)
		}
		return o
	}
	return rt.ToValue(func(call sobek.ConstructorCall) *sobek.Object {
		o := call.This
		defineReadOnly(o, "encoding", rt.ToValue("utf-8"))
		set(o, "encode", func(call sobek.FunctionCall) sobek.Value {
			s := ""
			if v := call.Argument(0); !sobek.IsUndefined(v) {
				s = v.String()
			}
			return newU8([]byte(s))
		})
		set(o, "encodeInto", func(call sobek.FunctionCall) sobek.Value {
			s := call.Argument(0).String()
			dst, ok := call.Argument(1).Export().([]byte)
			if !ok {
				panic(rt.NewTypeError("TextEncoder.encodeInto: the destination must be a Uint8Array, got %s", describeValue(call.Argument(1))))
			}
			read, written := 0, 0
			for _, r := range s {
				n := utf8.RuneLen(r)
				if n < 0 { // never: ranging over a string gives valid runes or U+FFFD
					n = 3
				}
				if written+n > len(dst) {
					break
				}
				written += utf8.EncodeRune(dst[written:], r)
				read++
				if r > 0xFFFF {
					read++ // two UTF-16 code units
				}
			}
			res := rt.NewObject()
			set(res, "read", read)
			set(res, "written", written)
			return res
		})
		return nil
	})
}

// newTextDecoderClass is the TextDecoder constructor.
func newTextDecoderClass(vu *VU) sobek.Value {
	rt := vu.rt
	return rt.ToValue(func(call sobek.ConstructorCall) *sobek.Object {
		label := "utf-8"
		if v := call.Argument(0); !sobek.IsUndefined(v) {
			label = v.String()
		}
		enc := ""
		clean := strings.ToLower(strings.Trim(label, "\t\n\f\r "))
		for name, labels := range decoderLabels {
			for _, l := range labels {
				if l == clean {
					enc = name
				}
			}
		}
		if enc == "" {
			e, err := rt.New(rt.Get("RangeError"), rt.ToValue(
				"TextDecoder: encoding "+strconv.Quote(label)+" is not supported: want utf-8, utf-16le or utf-16be"))
			if err != nil {
				panic(err)
			}
			panic(e)
		}
		d := &textDecoder{encoding: enc}
		if opts, ok := call.Argument(1).(*sobek.Object); ok {
			d.fatal = opts.Get("fatal") != nil && opts.Get("fatal").ToBoolean()
			d.ignoreBOM = opts.Get("ignoreBOM") != nil && opts.Get("ignoreBOM").ToBoolean()
		}
		o := call.This
		defineReadOnly(o, "encoding", rt.ToValue(enc))
		defineReadOnly(o, "fatal", rt.ToValue(d.fatal))
		defineReadOnly(o, "ignoreBOM", rt.ToValue(d.ignoreBOM))
		set(o, "decode", func(call sobek.FunctionCall) sobek.Value {
			var in []byte
			if v := call.Argument(0); present(v) {
				b, err := bufferSource(v, "TextDecoder.decode: input")
				if err != nil {
					panic(rt.NewTypeError(strings.TrimPrefix(err.Error(), errTypeError+": ")))
				}
				in = b
			}
			stream := false
			if opts, ok := call.Argument(1).(*sobek.Object); ok {
				stream = opts.Get("stream") != nil && opts.Get("stream").ToBoolean()
			}
			s, ok := d.decode(in, stream)
			if !ok {
				panic(rt.NewTypeError("TextDecoder.decode: the data is not valid %s (the decoder is fatal)", enc))
			}
			return rt.ToValue(s)
		})
		return nil
	})
}

// textDecoder is one TextDecoder's state: its options, and what a stream
// left pending between calls.
type textDecoder struct {
	encoding         string
	fatal, ignoreBOM bool

	bomSeen bool   // the stream's first code point went by
	pending []byte // bytes of an incomplete sequence or code unit
	lead    rune   // UTF-16: a lead surrogate waiting for its trail (0: none)
}

// decode decodes in after what is pending; ok is false on invalid input
// when fatal (the decoders call invalid for each U+FFFD they put out). Without stream, the decoder is reset for a new stream.
func (d *textDecoder) decode(in []byte, stream bool) (s string, ok bool) {
	data := append(d.pending, in...)
	d.pending = nil
	var out []rune
	ok = true
	bad := func() {
		if d.fatal {
			ok = false
		}
	}
	if d.encoding == "utf-8" {
		out = d.utf8(data, stream, out, bad)
	} else {
		out = d.utf16(data, stream, out, bad)
	}
	if !ok {
		d.reset()
		return "", false
	}
	if !d.ignoreBOM && !d.bomSeen && len(out) > 0 {
		if out[0] == 0xFEFF {
			out = out[1:]
		}
		d.bomSeen = true
	} else if len(out) > 0 {
		d.bomSeen = true
	}
	if !stream {
		d.reset()
	}
	return string(out), true
}

// reset readies the decoder for a new stream.
func (d *textDecoder) reset() { d.bomSeen, d.pending, d.lead = false, nil, 0 }

// utf8 is the standard's UTF-8 decoder: a sequence cut short by an
// invalid byte gives one U+FFFD and the byte is read again; an incomplete
// sequence at the end waits for the next call when streaming.
func (d *textDecoder) utf8(data []byte, stream bool, out []rune, invalid func()) []rune {
	bad := func() { out = append(out, utf8.RuneError); invalid() }
	for i := 0; i < len(data); {
		b := data[i]
		need, lower, upper, cp := 0, byte(0x80), byte(0xBF), rune(0)
		switch {
		case b < 0x80:
			out = append(out, rune(b))
			i++
			continue
		case b >= 0xC2 && b <= 0xDF:
			need, cp = 1, rune(b&0x1F)
		case b >= 0xE0 && b <= 0xEF:
			need, cp = 2, rune(b&0x0F)
			if b == 0xE0 {
				lower = 0xA0
			} else if b == 0xED {
				upper = 0x9F
			}
		case b >= 0xF0 && b <= 0xF4:
			need, cp = 3, rune(b&0x07)
			if b == 0xF0 {
				lower = 0x90
			} else if b == 0xF4 {
				upper = 0x8F
			}
		default:
			bad()
			i++
			continue
		}
		j := i + 1
		for seen := 0; seen < need; seen++ {
			if j >= len(data) {
				if stream {
					d.pending = append([]byte(nil), data[i:]...)
				} else {
					bad()
				}
				return out
			}
			c := data[j]
			if c < lower || c > upper {
				break
			}
			lower, upper = 0x80, 0xBF
			cp = cp<<6 | rune(c&0x3F)
			j++
		}
		if j-i-1 < need {
			bad() // the byte at j is read again
			i = j
			continue
		}
		out = append(out, cp)
		i = j
	}
	return out
}

// utf16 is the standard's UTF-16LE or UTF-16BE decoder.
func (d *textDecoder) utf16(data []byte, stream bool, out []rune, invalid func()) []rune {
	bad := func() { out = append(out, utf8.RuneError); invalid() }
	i := 0
	for ; i+1 < len(data); i += 2 {
		u := rune(data[i]) | rune(data[i+1])<<8
		if d.encoding == "utf-16be" {
			u = rune(data[i])<<8 | rune(data[i+1])
		}
		switch {
		case d.lead != 0 && u >= 0xDC00 && u <= 0xDFFF:
			out = append(out, 0x10000+(d.lead-0xD800)<<10+(u-0xDC00))
			d.lead = 0
			continue
		case d.lead != 0:
			d.lead = 0
			bad()
		}
		switch {
		case u >= 0xD800 && u <= 0xDBFF:
			d.lead = u
		case u >= 0xDC00 && u <= 0xDFFF:
			bad()
		default:
			out = append(out, u)
		}
	}
	if i < len(data) {
		d.pending = []byte{data[i]}
	}
	if !stream && (d.pending != nil || d.lead != 0) {
		d.pending, d.lead = nil, 0
		bad()
	}
	return out
}
