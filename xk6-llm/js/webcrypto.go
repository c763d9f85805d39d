package js

import (
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/grafana/sobek"
)

// The global crypto object: k6's WebCrypto API (a global since
// k6/experimental/webcrypto graduated), on Go's standard crypto packages. crypto.getRandomValues and crypto.randomUUID are synchronous;
// every crypto.subtle method returns a promise. A method reads its
// arguments on the VU's goroutine, does the cryptography on a goroutine of
// its own and settles its promise on the VU's event loop, so the call in
// progress (an iteration) waits for it as for any asynchronous work, and
// a rejection nobody handles fails the iteration with its message.
//
// This file holds the object, its errors, its arguments and its keys;
// webcrypto_keys.go generates, imports and exports keys, and
// webcrypto_ops.go digests, encrypts, signs and derives.

// The names of WebCrypto's errors (DOMException names), as k6 gives them:
// a rejection is an Error whose name is one of these.
const (
	errDataError          = "DataError"
	errInvalidAccess      = "InvalidAccessError"
	errNotSupported       = "NotSupportedError"
	errOperation          = "OperationError"
	errSyntax             = "SyntaxError"
	errTypeMismatch       = "TypeMismatchError"
	errQuotaExceeded      = "QuotaExceededError"
	errTypeError          = "TypeError" // made a real TypeError
	maxRandomValuesLength = 65536       // bytes getRandomValues fills at most, as the standard says
)

// cryptoError is a WebCrypto error: name is one of the err* names.
type cryptoError struct{ name, msg string }

func (e *cryptoError) Error() string { return e.name + ": " + e.msg }

// cryptoErr makes a cryptoError.
func cryptoErr(name, format string, args ...any) error {
	return &cryptoError{name: name, msg: fmt.Sprintf(format, args...)}
}

// jsThrow is a JavaScript exception thrown while a method read its
// arguments (a getter that throws): the promise is rejected with it.
type jsThrow struct{ v sobek.Value }

func (e *jsThrow) Error() string { return exceptionMessage(e.v) }

// The algorithm names, as WebCrypto spells them.
const (
	algAESCBC   = "AES-CBC"
	algAESCTR   = "AES-CTR"
	algAESGCM   = "AES-GCM"
	algAESKW    = "AES-KW"
	algHMAC     = "HMAC"
	algECDSA    = "ECDSA"
	algECDH     = "ECDH"
	algRSAPKCS1 = "RSASSA-PKCS1-v1_5"
	algRSAPSS   = "RSA-PSS"
	algRSAOAEP  = "RSA-OAEP"
	algPBKDF2   = "PBKDF2"
	algSHA1     = "SHA-1"
	algSHA256   = "SHA-256"
	algSHA384   = "SHA-384"
	algSHA512   = "SHA-512"
)

// cryptoOps is the one table of what crypto.subtle supports: the
// algorithms of each operation, as in k6 (which also leaves out HKDF,
// X25519 and Ed25519, and has no wrapKey nor unwrapKey). "get key length"
// is deriveKey's step that sizes the derived key.
var cryptoOps = map[string][]string{
	"digest":      {algSHA1, algSHA256, algSHA384, algSHA512},
	"generateKey": {algAESCBC, algAESCTR, algAESGCM, algAESKW, algHMAC, algECDSA, algECDH, algRSAPKCS1, algRSAPSS, algRSAOAEP},
	"importKey": {algAESCBC, algAESCTR, algAESGCM, algAESKW, algHMAC, algECDSA, algECDH, algRSAPKCS1, algRSAPSS, algRSAOAEP,
		algPBKDF2},
	"encrypt":        {algAESCBC, algAESCTR, algAESGCM, algRSAOAEP},
	"decrypt":        {algAESCBC, algAESCTR, algAESGCM, algRSAOAEP},
	"sign":           {algHMAC, algECDSA, algRSAPKCS1, algRSAPSS},
	"verify":         {algHMAC, algECDSA, algRSAPKCS1, algRSAPSS},
	"deriveBits":     {algECDH, algPBKDF2},
	"deriveKey":      {algECDH, algPBKDF2},
	"get key length": {algAESCBC, algAESCTR, algAESGCM, algAESKW, algHMAC},
}

// keyUsages are the usages a key may have, in the standard's order.
var keyUsages = []string{"encrypt", "decrypt", "sign", "verify", "deriveKey", "deriveBits", "wrapKey", "unwrapKey"}

// webCrypto is one VU's crypto object.
type webCrypto struct {
	vu *VU
	rt *sobek.Runtime
	// handle is the symbol under which a CryptoKey object keeps its Go
	// key; ctor is the CryptoKey interface (not constructible) and proto
	// its prototype, the CryptoKey objects'.
	handle *sobek.Symbol
	ctor   *sobek.Object
	proto  *sobek.Object
}

// newWebCrypto makes the VU's crypto state.
func newWebCrypto(vu *VU) *webCrypto {
	rt := vu.rt
	c := &webCrypto{vu: vu, rt: rt, handle: sobek.NewSymbol("CryptoKey handle")}
	c.ctor = rt.ToValue(func(sobek.ConstructorCall) *sobek.Object {
		panic(rt.NewTypeError("CryptoKey: illegal constructor: keys come from crypto.subtle's generateKey, importKey and deriveKey"))
	}).(*sobek.Object)
	c.proto = c.ctor.Get("prototype").(*sobek.Object)
	if err := c.proto.DefineDataPropertySymbol(sobek.SymToStringTag, vu.rt.ToValue("CryptoKey"),
		sobek.FLAG_FALSE, sobek.FLAG_TRUE, sobek.FLAG_FALSE); err != nil {
		panic(err)
	}
	return c
}

// object is the global crypto: getRandomValues, randomUUID, subtle and
// the CryptoKey interface (keys are instances of it; it is not
// constructible).
func (c *webCrypto) object() sobek.Value {
	rt := c.rt
	o := rt.NewObject()
	defineReadOnly(o, "getRandomValues", rt.ToValue(c.getRandomValues))
	defineReadOnly(o, "randomUUID", rt.ToValue(func() string { return randomUUID() }))
	subtle := rt.NewObject()
	for name, fn := range map[string]func(sobek.FunctionCall) sobek.Value{
		"digest": c.digest, "generateKey": c.generateKey, "importKey": c.importKey, "exportKey": c.exportKey,
		"encrypt": c.encrypt, "decrypt": c.decrypt, "sign": c.sign, "verify": c.verify,
		"deriveBits": c.deriveBits, "deriveKey": c.deriveKey,
		"wrapKey": c.unsupported("wrapKey"), "unwrapKey": c.unsupported("unwrapKey"),
	} {
		defineReadOnly(subtle, name, rt.ToValue(fn))
	}
	defineReadOnly(o, "subtle", subtle)
	defineReadOnly(o, "CryptoKey", c.ctor)
	return o
}

// defineReadOnly defines o[name] = v, not writable, enumerable.
func defineReadOnly(o *sobek.Object, name string, v sobek.Value) {
	if err := o.DefineDataProperty(name, v, sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_TRUE); err != nil {
		panic(err)
	}
}

// getRandomValues fills an integer typed array with random bytes and
// returns it; another value is a TypeMismatchError, more than 65536 bytes a
// QuotaExceededError (thrown: the method is synchronous).
func (c *webCrypto) getRandomValues(v sobek.Value) sobek.Value {
	b, ok := integerArrayBytes(v)
	if !ok {
		panic(c.errorValue(cryptoErr(errTypeMismatch,
			"crypto.getRandomValues: want an integer typed array (Int8Array … BigUint64Array), got %s", describeValue(v))))
	}
	if len(b) > maxRandomValuesLength {
		panic(c.errorValue(cryptoErr(errQuotaExceeded,
			"crypto.getRandomValues: the array has %d bytes, over the limit of %d", len(b), maxRandomValuesLength)))
	}
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return v
}

// integerArrayBytes is the bytes of an integer typed array's view (not a
// copy), and whether v is one.
func integerArrayBytes(v sobek.Value) ([]byte, bool) {
	o, ok := v.(*sobek.Object)
	if !ok {
		return nil, false
	}
	t := o.ExportType()
	if t == nil || t.Kind() != reflect.Slice {
		return nil, false
	}
	switch t.Elem().Kind() {
	case reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32, reflect.Int64, reflect.Uint64:
	default:
		return nil, false
	}
	return viewBytes(o)
}

// viewBytes is the bytes a typed array or DataView views, shared with it.
func viewBytes(o *sobek.Object) ([]byte, bool) {
	buf, ok := o.Get("buffer").Export().(sobek.ArrayBuffer)
	if !ok {
		return nil, false
	}
	all := buf.Bytes()
	off, n := o.Get("byteOffset").ToInteger(), o.Get("byteLength").ToInteger()
	if off < 0 || n < 0 || off+n > int64(len(all)) {
		return nil, false
	}
	return all[off : off+n], true
}

// describeValue names a value's kind in an error message.
func describeValue(v sobek.Value) string {
	switch {
	case v == nil || sobek.IsUndefined(v):
		return "undefined"
	case sobek.IsNull(v):
		return "null"
	}
	if o, ok := v.(*sobek.Object); ok {
		if c, ok := o.Get("constructor").(*sobek.Object); ok {
			if n := c.Get("name"); n != nil && n.String() != "" {
				return "a " + n.String()
			}
		}
		return "an object"
	}
	return fmt.Sprintf("%T %s", v.Export(), v.String())
}

// randomUUID is a random (version 4) UUID in its 36-character form.
func randomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// errorValue is err as the value a promise is rejected with: an Error
// named as WebCrypto names it (a TypeError for a TypeError), or the
// exception a getter threw.
func (c *webCrypto) errorValue(err error) sobek.Value {
	if t, ok := errors.AsType[*jsThrow](err); ok {
		return t.v
	}
	ce, ok := errors.AsType[*cryptoError](err)
	if !ok {
		ce = &cryptoError{name: errOperation, msg: err.Error()}
	}
	if ce.name == errTypeError {
		return c.rt.NewTypeError(ce.msg)
	}
	o, err := c.rt.New(c.rt.Get("Error"), c.rt.ToValue(ce.msg))
	if err != nil {
		panic(err)
	}
	if err := o.DefineDataProperty("name", c.rt.ToValue(ce.name), sobek.FLAG_TRUE, sobek.FLAG_TRUE, sobek.FLAG_FALSE); err != nil {
		panic(err)
	}
	return o
}

// cryptoJob is a method's work off the VU's goroutine: it returns what
// makes the promise's value on the VU's goroutine, or an error.
type cryptoJob func() (func() sobek.Value, error)

// async returns a promise of a method: prep reads the arguments on the
// VU's goroutine (an error, or an exception it throws, rejects the
// promise at once), the job it returns runs on a goroutine of its own, and
// the promise is settled on the VU's event loop. The call that made the
// promise waits for it; its end drops the settlement.
func (c *webCrypto) async(prep func() (cryptoJob, error)) sobek.Value {
	rt := c.rt
	promise, resolve, reject := rt.NewPromise()
	job, err := c.prepare(prep)
	if err != nil {
		if err := reject(c.errorValue(err)); err != nil {
			panic(err)
		}
		return rt.ToValue(promise)
	}
	ctx, enqueue := c.vu.asyncWork()
	go func() {
		settle, err := job()
		enqueue(func() error {
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return reject(c.errorValue(err))
			}
			return resolve(settle())
		})
	}()
	return rt.ToValue(promise)
}

// prepare runs prep, turning a JavaScript exception into a jsThrow.
func (c *webCrypto) prepare(prep func() (cryptoJob, error)) (job cryptoJob, err error) {
	defer func() {
		if r := recover(); r != nil {
			ex, ok := r.(*sobek.Exception)
			if !ok {
				panic(r)
			}
			job, err = nil, &jsThrow{v: ex.Value()}
		}
	}()
	return prep()
}

// unsupported is a subtle method k6 does not implement either: its
// promise is rejected with a NotSupportedError.
func (c *webCrypto) unsupported(name string) func(sobek.FunctionCall) sobek.Value {
	return func(sobek.FunctionCall) sobek.Value {
		return c.async(func() (cryptoJob, error) {
			return nil, cryptoErr(errNotSupported, "crypto.subtle.%s is not implemented (nor is it in k6): "+
				"export the key and encrypt it with encrypt() instead", name)
		})
	}
}

// bufferSource is a copy of the bytes of an ArrayBuffer, a typed array or
// a DataView (the standard's BufferSource); what names the argument in the
// error otherwise.
func bufferSource(v sobek.Value, what string) ([]byte, error) {
	if o, ok := v.(*sobek.Object); ok {
		if ab, ok := o.Export().(sobek.ArrayBuffer); ok {
			return slices.Clone(ab.Bytes()), nil
		}
		if b, ok := viewBytes(o); ok {
			return slices.Clone(b), nil
		}
	}
	return nil, cryptoErr(errTypeError, "%s: want an ArrayBuffer, a typed array or a DataView, got %s", what, describeValue(v))
}

// algorithm is a normalized algorithm argument: its name as the standard
// spells it, and its object (nil when it was given as a string).
type algorithm struct {
	name string
	obj  *sobek.Object
	rt   *sobek.Runtime
	op   string
}

// normalize reads the algorithm argument of op: a name or an object with
// a name, matched without regard to case; an algorithm op does not
// support is a NotSupportedError.
func (c *webCrypto) normalize(v sobek.Value, op string) (algorithm, error) {
	return normalizeAlgorithm(c.rt, v, op)
}

// normalizeAlgorithm is webCrypto.normalize.
func normalizeAlgorithm(rt *sobek.Runtime, v sobek.Value, op string) (algorithm, error) {
	a := algorithm{rt: rt, op: op}
	var name string
	switch {
	case !present(v):
		return a, cryptoErr(errTypeError, "%s: the algorithm is missing: give its name or an object with its name", op)
	case isString(v):
		name = v.String()
	default:
		o, ok := v.(*sobek.Object)
		if !ok {
			return a, cryptoErr(errTypeError, "%s: the algorithm must be a name or an object with a name, got %s", op, describeValue(v))
		}
		n := o.Get("name")
		if !present(n) {
			return a, cryptoErr(errTypeError, "%s: the algorithm object has no name", op)
		}
		a.obj, name = o, n.String()
	}
	for _, known := range cryptoOps[op] {
		if strings.EqualFold(known, name) {
			a.name = known
			return a, nil
		}
	}
	return a, cryptoErr(errNotSupported, "%s: algorithm %q is not supported: want one of %s",
		op, name, strings.Join(cryptoOps[op], ", "))
}

// isString says whether v is a JavaScript string.
func isString(v sobek.Value) bool {
	_, ok := v.Export().(string)
	return ok
}

// get is the algorithm's member field (undefined when it was a string).
func (a algorithm) get(field string) sobek.Value {
	if a.obj == nil {
		return sobek.Undefined()
	}
	return a.obj.Get(field)
}

// has says whether the algorithm has member field.
func (a algorithm) has(field string) bool { return present(a.get(field)) }

// bytes is the algorithm's BufferSource member field, which must be there.
func (a algorithm) bytes(field string) ([]byte, error) {
	v := a.get(field)
	if !present(v) {
		return nil, cryptoErr(errTypeError, "%s: %s needs %s in its parameters", a.op, a.name, field)
	}
	return bufferSource(v, fmt.Sprintf("%s: %s's %s", a.op, a.name, field))
}

// int is the algorithm's integer member field, which must be there.
func (a algorithm) int(field string) (int, error) {
	v := a.get(field)
	if !present(v) {
		return 0, cryptoErr(errTypeError, "%s: %s needs %s in its parameters", a.op, a.name, field)
	}
	f := v.ToFloat()
	if f != f || f < 0 || f > 1<<31 || f != float64(int64(f)) {
		return 0, cryptoErr(errTypeError, "%s: %s's %s must be a whole number ≥ 0, got %s", a.op, a.name, field, v.String())
	}
	return int(f), nil
}

// hash is the algorithm's hash member (a name or an object with a name),
// which must be there and name a hash digest supports.
func (a algorithm) hash(field string) (string, error) {
	v := a.get(field)
	if !present(v) {
		return "", cryptoErr(errTypeError, "%s: %s needs %s in its parameters (SHA-1, SHA-256, SHA-384 or SHA-512)",
			a.op, a.name, field)
	}
	h, err := normalizeAlgorithm(a.rt, v, "digest")
	if err != nil {
		return "", cryptoErr(errNotSupported, "%s: %s's %s: %s", a.op, a.name, field, strings.TrimPrefix(err.Error(), errNotSupported+": digest: "))
	}
	return h.name, nil
}

// usagesArg reads a list of key usages.
func usagesArg(rt *sobek.Runtime, v sobek.Value, op string) ([]string, error) {
	var list []string
	if !present(v) || rt.ExportTo(v, &list) != nil {
		return nil, cryptoErr(errTypeError, "%s: the key usages must be an array of strings, got %s", op, describeValue(v))
	}
	for _, u := range list {
		if !slices.Contains(keyUsages, u) {
			return nil, cryptoErr(errTypeError, "%s: unknown key usage %q: want some of %s", op, u, strings.Join(keyUsages, ", "))
		}
	}
	return list, nil
}

// keyArg is the Go key of a CryptoKey argument.
func (c *webCrypto) keyArg(v sobek.Value, op, what string) (*cryptoKey, error) {
	if o, ok := v.(*sobek.Object); ok {
		if h := o.GetSymbol(c.handle); h != nil {
			if k, ok := h.Export().(*cryptoKey); ok {
				return k, nil
			}
		}
	}
	return nil, cryptoErr(errInvalidAccess, "%s: %s must be a CryptoKey (from generateKey, importKey or deriveKey), got %s",
		op, what, describeValue(v))
}

// usableFor checks that key k may be used by algorithm name for usage: the
// names match and k has the usage (else an InvalidAccessError).
func (k *cryptoKey) usableFor(op, name, usage string) error {
	if k.alg != name {
		return cryptoErr(errInvalidAccess, "%s: the key is an %s key, not an %s key", op, k.alg, name)
	}
	if !slices.Contains(k.usages, usage) {
		return cryptoErr(errInvalidAccess, "%s: the key's usages %v lack %q", op, k.usages, usage)
	}
	return nil
}

// keyObject is the CryptoKey object of k: type, extractable, algorithm
// and usages, read-only, and k under the handle symbol.
func (c *webCrypto) keyObject(k *cryptoKey) *sobek.Object {
	rt := c.rt
	o := rt.NewObject()
	if err := o.SetPrototype(c.proto); err != nil {
		panic(err)
	}
	defineReadOnly(o, "type", rt.ToValue(k.typ))
	defineReadOnly(o, "extractable", rt.ToValue(k.extractable))
	defineReadOnly(o, "algorithm", c.keyAlgorithm(k))
	defineReadOnly(o, "usages", rt.ToValue(c.stringArray(k.usages)))
	if err := o.DefineDataPropertySymbol(c.handle, rt.ToValue(k), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_FALSE); err != nil {
		panic(err)
	}
	return o
}

// stringArray is list as a JavaScript array.
func (c *webCrypto) stringArray(list []string) *sobek.Object {
	vals := make([]any, len(list))
	for i, s := range list {
		vals[i] = s
	}
	return c.rt.NewArray(vals...)
}

// keyAlgorithm is a key's algorithm object, as the standard has it per
// algorithm: name, and length (AES, HMAC), hash (HMAC, RSA), namedCurve
// (EC), modulusLength and publicExponent (RSA).
func (c *webCrypto) keyAlgorithm(k *cryptoKey) *sobek.Object {
	rt := c.rt
	o := rt.NewObject()
	set(o, "name", k.alg)
	switch k.alg {
	case algAESCBC, algAESCTR, algAESGCM, algAESKW:
		set(o, "length", k.length)
	case algHMAC:
		set(o, "length", k.length)
		set(o, "hash", c.named(k.hash))
	case algECDSA, algECDH:
		set(o, "namedCurve", k.curve)
	case algRSAPKCS1, algRSAPSS, algRSAOAEP:
		pub := k.rsaPublic()
		set(o, "modulusLength", pub.N.BitLen())
		set(o, "publicExponent", c.uint8Array(bigEndian(uint64(pub.E))))
		set(o, "hash", c.named(k.hash))
	}
	return o
}

// named is {name}.
func (c *webCrypto) named(name string) *sobek.Object {
	o := c.rt.NewObject()
	set(o, "name", name)
	return o
}

// uint8Array is a new Uint8Array of b.
func (c *webCrypto) uint8Array(b []byte) sobek.Value {
	o, err := c.rt.New(c.rt.Get("Uint8Array"), c.rt.ToValue(c.rt.NewArrayBuffer(b)))
	if err != nil {
		panic(err)
	}
	return o
}

// bigEndian is n's big-endian bytes without leading zeros.
func bigEndian(n uint64) []byte {
	var b []byte
	for ; n > 0; n >>= 8 {
		b = append([]byte{byte(n)}, b...)
	}
	return b
}

// arrayBuffer settles a promise with b as an ArrayBuffer.
func (c *webCrypto) arrayBuffer(b []byte) func() sobek.Value {
	return func() sobek.Value { return c.rt.ToValue(c.rt.NewArrayBuffer(b)) }
}
