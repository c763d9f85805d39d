package js

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"slices"
	"sort"

	"github.com/grafana/sobek"
	//lint:ignore SA1019 k6/crypto offers MD4, broken as it is, for scripts that talk to legacy systems
	"golang.org/x/crypto/md4"
	//lint:ignore SA1019 k6/crypto offers RIPEMD-160, a legacy hash, for the same reason
	"golang.org/x/crypto/ripemd160"
)

// cryptoHashes are the hash algorithms of `k6/crypto`, by k6's names. md4
// and ripemd160 are not in Go's standard library; they come from
// golang.org/x/crypto, as in k6.
var cryptoHashes = map[string]func() hash.Hash{
	"md4":        md4.New,
	"md5":        md5.New,
	"ripemd160":  ripemd160.New,
	"sha1":       sha1.New,
	"sha256":     sha256.New,
	"sha384":     sha512.New384,
	"sha512":     sha512.New,
	"sha512_224": sha512.New512_224,
	"sha512_256": sha512.New512_256,
}

// cryptoExports are the names `k6/crypto` exports.
func cryptoExports() []string {
	names := []string{"createHash", "createHMAC", "hexEncode", "hmac", "randomBytes"}
	for n := range cryptoHashes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// newCryptoModule is `k6/crypto`, as k6's: one function per hash
// (sha256(input, outputEncoding)), hmac(algorithm, secret, data,
// outputEncoding), createHash(algorithm) and createHMAC(algorithm, secret)
// objects with update(input) and digest(outputEncoding), and
// randomBytes(n) (an ArrayBuffer from the system's random source) and
// hexEncode(data) (the hex of a string, an ArrayBuffer or a typed array). The
// output encodings are hex, base64, base64url, base64rawurl and binary (an
// ArrayBuffer).
func newCryptoModule(vu *VU) *sobek.Object {
	rt := vu.rt
	o := rt.NewObject()
	algo := func(fn, name string) func() hash.Hash {
		h, ok := cryptoHashes[name]
		if !ok {
			names := make([]string, 0, len(cryptoHashes))
			for n := range cryptoHashes {
				names = append(names, n)
			}
			slices.Sort(names)
			panic(rt.NewTypeError("%s: unknown algorithm %q: want one of %v", fn, name, names))
		}
		return h
	}
	encode := func(fn string, sum []byte, enc sobek.Value) sobek.Value {
		e := "hex"
		if present(enc) {
			e = enc.String()
		}
		switch e {
		case "hex":
			return rt.ToValue(hex.EncodeToString(sum))
		case "base64":
			return rt.ToValue(base64.StdEncoding.EncodeToString(sum))
		case "base64url":
			return rt.ToValue(base64.URLEncoding.EncodeToString(sum))
		case "base64rawurl":
			return rt.ToValue(base64.RawURLEncoding.EncodeToString(sum))
		case "binary":
			return rt.ToValue(rt.NewArrayBuffer(sum))
		}
		panic(rt.NewTypeError("%s: unknown output encoding %q: want hex, base64, base64url, base64rawurl or binary", fn, e))
	}
	hasher := func(fn string, h hash.Hash) *sobek.Object {
		ho := rt.NewObject()
		set(ho, "update", func(call sobek.FunctionCall) sobek.Value {
			h.Write(bytesArg(rt, fn+".update", call.Argument(0)))
			return ho
		})
		set(ho, "digest", func(call sobek.FunctionCall) sobek.Value {
			return encode(fn+".digest", h.Sum(nil), call.Argument(0))
		})
		return ho
	}
	for name, newHash := range cryptoHashes {
		set(o, name, func(call sobek.FunctionCall) sobek.Value {
			h := newHash()
			h.Write(bytesArg(rt, name, call.Argument(0)))
			return encode(name, h.Sum(nil), call.Argument(1))
		})
	}
	set(o, "createHash", func(call sobek.FunctionCall) sobek.Value {
		return hasher("createHash", algo("createHash", call.Argument(0).String())())
	})
	set(o, "createHMAC", func(call sobek.FunctionCall) sobek.Value {
		newHash := algo("createHMAC", call.Argument(0).String())
		return hasher("createHMAC", hmac.New(newHash, bytesArg(rt, "createHMAC", call.Argument(1))))
	})
	set(o, "hmac", func(call sobek.FunctionCall) sobek.Value {
		newHash := algo("hmac", call.Argument(0).String())
		m := hmac.New(newHash, bytesArg(rt, "hmac", call.Argument(1)))
		m.Write(bytesArg(rt, "hmac", call.Argument(2)))
		return encode("hmac", m.Sum(nil), call.Argument(3))
	})
	set(o, "hexEncode", func(call sobek.FunctionCall) sobek.Value {
		return rt.ToValue(hex.EncodeToString(bytesArg(rt, "hexEncode", call.Argument(0))))
	})
	set(o, "randomBytes", func(call sobek.FunctionCall) sobek.Value {
		n := call.Argument(0).ToInteger()
		if n < 0 || n > 1<<20 {
			panic(rt.NewTypeError("randomBytes: want a size from 0 to 1048576, got %d", n))
		}
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return rt.ToValue(rt.NewArrayBuffer(b))
	})
	return o
}
