package js

import (
	"encoding/base64"
	"fmt"

	"github.com/grafana/sobek"
)

// base64Encodings are k6/encoding's encodings by name: standard and URL
// alphabets, padded or raw (no padding).
var base64Encodings = map[string]*base64.Encoding{
	"std":    base64.StdEncoding,
	"rawstd": base64.RawStdEncoding,
	"url":    base64.URLEncoding,
	"rawurl": base64.RawURLEncoding,
}

// newEncodingModule is `k6/encoding`: b64encode(input, encoding) and
// b64decode(input, encoding, format), as k6's. The input is a string
// (its UTF-8 bytes) or an ArrayBuffer or typed array; the encoding is
// std (default), rawstd, url or rawurl; b64decode returns an ArrayBuffer,
// or a string with format "s".
func newEncodingModule(vu *VU) *sobek.Object {
	rt := vu.rt
	o := rt.NewObject()
	enc := func(name string, v sobek.Value) *base64.Encoding {
		n := "std"
		if present(v) {
			n = v.String()
		}
		e, ok := base64Encodings[n]
		if !ok {
			panic(rt.NewTypeError("%s: unknown encoding %q: want std, rawstd, url or rawurl", name, n))
		}
		return e
	}
	set(o, "b64encode", func(call sobek.FunctionCall) sobek.Value {
		b := bytesArg(rt, "b64encode", call.Argument(0))
		return rt.ToValue(enc("b64encode", call.Argument(1)).EncodeToString(b))
	})
	set(o, "b64decode", func(call sobek.FunctionCall) sobek.Value {
		s := call.Argument(0).String()
		b, err := enc("b64decode", call.Argument(1)).DecodeString(s)
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("b64decode: %w", err)))
		}
		if call.Argument(2).String() == "s" {
			return rt.ToValue(string(b))
		}
		return rt.ToValue(rt.NewArrayBuffer(b))
	})
	return o
}

// bytesArg is a binary argument of the modules: a string as its UTF-8
// bytes, an ArrayBuffer or a typed array as its bytes.
func bytesArg(rt *sobek.Runtime, fn string, v sobek.Value) []byte {
	if !present(v) {
		return nil
	}
	switch b := v.Export().(type) {
	case string:
		return []byte(b)
	case sobek.ArrayBuffer:
		return b.Bytes()
	case []byte:
		return b
	}
	if obj, ok := v.(*sobek.Object); ok {
		if buf, ok := obj.Get("buffer").Export().(sobek.ArrayBuffer); ok {
			return buf.Bytes()
		}
	}
	panic(rt.NewTypeError("%s: want a string, an ArrayBuffer or a typed array", fn))
}
