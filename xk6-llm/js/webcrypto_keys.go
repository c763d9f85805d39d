package js

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/grafana/sobek"
)

// cryptoKey is the Go side of a CryptoKey: immutable once made, so a
// method's goroutine reads it while the VU runs on.
type cryptoKey struct {
	typ         string // "secret", "private" or "public"
	extractable bool
	alg         string // the algorithm's name
	length      int    // AES, HMAC: the key's length in bits
	hash        string // HMAC, RSA: the hash's name
	curve       string // ECDSA, ECDH: the named curve
	usages      []string

	secret  []byte // AES, HMAC, PBKDF2
	ecPriv  *ecdsa.PrivateKey
	ecPub   *ecdsa.PublicKey // also set for a private key
	rsaPriv *rsa.PrivateKey
	rsaPub  *rsa.PublicKey // also set for a private key
}

// rsaPublic is an RSA key's public part.
func (k *cryptoKey) rsaPublic() *rsa.PublicKey { return k.rsaPub }

// usageRules are the usages each algorithm's keys may have, by key type
// (WebCrypto's rules; a usage outside them is a SyntaxError).
var usageRules = map[string]map[string][]string{
	algAESCBC:   {"secret": {"encrypt", "decrypt", "wrapKey", "unwrapKey"}},
	algAESCTR:   {"secret": {"encrypt", "decrypt", "wrapKey", "unwrapKey"}},
	algAESGCM:   {"secret": {"encrypt", "decrypt", "wrapKey", "unwrapKey"}},
	algAESKW:    {"secret": {"wrapKey", "unwrapKey"}},
	algHMAC:     {"secret": {"sign", "verify"}},
	algPBKDF2:   {"secret": {"deriveKey", "deriveBits"}},
	algECDSA:    {"private": {"sign"}, "public": {"verify"}},
	algECDH:     {"private": {"deriveKey", "deriveBits"}, "public": {}},
	algRSAPKCS1: {"private": {"sign"}, "public": {"verify"}},
	algRSAPSS:   {"private": {"sign"}, "public": {"verify"}},
	algRSAOAEP:  {"private": {"decrypt", "unwrapKey"}, "public": {"encrypt", "wrapKey"}},
}

// checkUsages checks the usages a new key of algorithm alg and type typ
// is given, and returns them without repeats.
func checkUsages(op, alg, typ string, usages []string) ([]string, error) {
	allowed := usageRules[alg][typ]
	var out []string
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return nil, cryptoErr(errSyntax, "%s: a %s %s key cannot have usage %q (it may have %s)",
				op, typ, alg, u, orNone(allowed))
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	if len(out) == 0 && typ != "public" {
		return nil, cryptoErr(errSyntax, "%s: a %s %s key needs at least one usage (of %s)", op, typ, alg, orNone(allowed))
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// splitUsages checks the usages of a new key pair and splits them into
// the private key's and the public key's.
func splitUsages(op, alg string, usages []string) (priv, pub []string, err error) {
	rules := usageRules[alg]
	for _, u := range usages {
		switch {
		case slices.Contains(rules["private"], u):
			priv = append(priv, u)
		case slices.Contains(rules["public"], u):
			pub = append(pub, u)
		default:
			return nil, nil, cryptoErr(errSyntax, "%s: an %s key pair cannot have usage %q (it may have %s)",
				op, alg, u, orNone(append(slices.Clone(rules["private"]), rules["public"]...)))
		}
	}
	if priv, err = checkUsages(op, alg, "private", priv); err != nil {
		return nil, nil, err
	}
	pub, err = checkUsages(op, alg, "public", pub)
	return priv, pub, err
}

// orNone joins list, or says none.
func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// hashBlockBits is the block size of hash in bits: an HMAC key's default
// length.
func hashBlockBits(hash string) int {
	if hash == algSHA384 || hash == algSHA512 {
		return 1024
	}
	return 512
}

// curves are the named curves of ECDSA and ECDH.
var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

// curveArg is the namedCurve member of an EC algorithm.
func curveArg(a algorithm) (string, error) {
	v := a.get("namedCurve")
	if !present(v) {
		return "", cryptoErr(errTypeError, "%s: %s needs namedCurve in its parameters (P-256, P-384 or P-521)", a.op, a.name)
	}
	if _, ok := curves[v.String()]; !ok {
		return "", cryptoErr(errNotSupported, "%s: %s: curve %q is not supported: want P-256, P-384 or P-521", a.op, a.name, v.String())
	}
	return v.String(), nil
}

// aesAlg reports whether name is an AES algorithm.
func aesAlg(name string) bool { return strings.HasPrefix(name, "AES-") }

// rsaAlg reports whether name is an RSA algorithm.
func rsaAlg(name string) bool { return name == algRSAPKCS1 || name == algRSAPSS || name == algRSAOAEP }

// ecAlg reports whether name is an elliptic-curve algorithm.
func ecAlg(name string) bool { return name == algECDSA || name == algECDH }

// generateKey is crypto.subtle.generateKey(algorithm, extractable,
// usages): a CryptoKey (AES, HMAC) or a CryptoKeyPair (ECDSA, ECDH, RSA).
func (c *webCrypto) generateKey(call sobek.FunctionCall) sobek.Value {
	const op = "generateKey"
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		extractable := call.Argument(1).ToBoolean()
		usages, err := usagesArg(c.rt, call.Argument(2), op)
		if err != nil {
			return nil, err
		}
		switch {
		case aesAlg(a.name) || a.name == algHMAC:
			length, hash, err := secretLength(a)
			if err != nil {
				return nil, err
			}
			if usages, err = checkUsages(op, a.name, "secret", usages); err != nil {
				return nil, err
			}
			return func() (func() sobek.Value, error) {
				b := make([]byte, length/8)
				_, _ = rand.Read(b)
				k := &cryptoKey{typ: "secret", extractable: extractable, alg: a.name, length: length, hash: hash, usages: usages, secret: b}
				return func() sobek.Value { return c.keyObject(k) }, nil
			}, nil
		case ecAlg(a.name):
			curve, err := curveArg(a)
			if err != nil {
				return nil, err
			}
			privU, pubU, err := splitUsages(op, a.name, usages)
			if err != nil {
				return nil, err
			}
			return func() (func() sobek.Value, error) {
				priv, err := ecdsa.GenerateKey(curves[curve], rand.Reader)
				if err != nil {
					return nil, cryptoErr(errOperation, "%s: %s: %v", op, a.name, err)
				}
				base := cryptoKey{alg: a.name, curve: curve, ecPub: &priv.PublicKey}
				return c.pair(base, extractable, privU, pubU, func(k *cryptoKey) { k.ecPriv = priv }), nil
			}, nil
		default: // RSA
			bits, err := a.int("modulusLength")
			if err != nil {
				return nil, err
			}
			exp, err := a.bytes("publicExponent")
			if err != nil {
				return nil, err
			}
			if e := new(big.Int).SetBytes(exp); e.Cmp(big.NewInt(65537)) != 0 {
				return nil, cryptoErr(errOperation, "%s: %s: publicExponent %s is not supported: Go's crypto/rsa makes keys "+
					"with 65537 only (new Uint8Array([1, 0, 1]))", op, a.name, e)
			}
			hash, err := a.hash("hash")
			if err != nil {
				return nil, err
			}
			privU, pubU, err := splitUsages(op, a.name, usages)
			if err != nil {
				return nil, err
			}
			return func() (func() sobek.Value, error) {
				priv, err := rsa.GenerateKey(rand.Reader, bits)
				if err != nil {
					return nil, cryptoErr(errOperation, "%s: %s with modulusLength %d: %v", op, a.name, bits, err)
				}
				base := cryptoKey{alg: a.name, hash: hash, rsaPub: &priv.PublicKey}
				return c.pair(base, extractable, privU, pubU, func(k *cryptoKey) { k.rsaPriv = priv }), nil
			}, nil
		}
	})
}

// secretLength reads an AES key's length (128, 192 or 256) or an HMAC
// key's hash and length (by default the hash's block size).
func secretLength(a algorithm) (length int, hash string, err error) {
	if a.name == algHMAC {
		if hash, err = a.hash("hash"); err != nil {
			return 0, "", err
		}
		length = hashBlockBits(hash)
		if a.has("length") {
			if length, err = a.int("length"); err != nil {
				return 0, "", err
			}
		}
		switch {
		case length == 0:
			return 0, "", cryptoErr(errOperation, "%s: an HMAC key's length cannot be 0", a.op)
		case length%8 != 0:
			return 0, "", cryptoErr(errNotSupported, "%s: an HMAC key's length must be a multiple of 8 bits here, got %d", a.op, length)
		}
		return length, hash, nil
	}
	if length, err = a.int("length"); err != nil {
		return 0, "", err
	}
	if length != 128 && length != 192 && length != 256 {
		return 0, "", cryptoErr(errOperation, "%s: an %s key's length must be 128, 192 or 256 bits, got %d", a.op, a.name, length)
	}
	return length, "", nil
}

// pair settles generateKey with a CryptoKeyPair made of base.
func (c *webCrypto) pair(base cryptoKey, extractable bool, privU, pubU []string, private func(*cryptoKey)) func() sobek.Value {
	pub, priv := base, base
	pub.typ, pub.extractable, pub.usages = "public", true, pubU // a public key is always extractable
	priv.typ, priv.extractable, priv.usages = "private", extractable, privU
	private(&priv)
	return func() sobek.Value {
		o := c.rt.NewObject()
		set(o, "privateKey", c.keyObject(&priv))
		set(o, "publicKey", c.keyObject(&pub))
		return o
	}
}

// keyFormats are the formats of importKey and exportKey.
var keyFormats = []string{"raw", "spki", "pkcs8", "jwk"}

// formatArg reads the format argument.
func formatArg(v sobek.Value, op string) (string, error) {
	f := ""
	if present(v) {
		f = v.String()
	}
	if !slices.Contains(keyFormats, f) {
		return "", cryptoErr(errTypeError, "%s: unknown key format %q: want raw, spki, pkcs8 or jwk", op, f)
	}
	return f, nil
}

// jwkKey is a JSON Web Key's members that WebCrypto reads and writes.
type jwkKey struct {
	kty, alg, use, k, crv, x, y, d, n, e, p, q, dp, dq, qi string
	ext                                                    *bool
	keyOps                                                 []string
}

// jwkFields are a JWK's string members, in the order exportKey writes
// them, with their fields.
func (j *jwkKey) fields() []struct {
	name string
	v    *string
} {
	return []struct {
		name string
		v    *string
	}{{"kty", &j.kty}, {"crv", &j.crv}, {"x", &j.x}, {"y", &j.y}, {"d", &j.d}, {"n", &j.n}, {"e", &j.e},
		{"p", &j.p}, {"q", &j.q}, {"dp", &j.dp}, {"dq", &j.dq}, {"qi", &j.qi}, {"k", &j.k}, {"alg", &j.alg}, {"use", &j.use}}
}

// readJWK reads a JWK object.
func (c *webCrypto) readJWK(v sobek.Value) (*jwkKey, error) {
	o, ok := v.(*sobek.Object)
	if !ok || isString(v) {
		return nil, cryptoErr(errTypeError, "importKey: a jwk key must be an object (a JSON Web Key), got %s", describeValue(v))
	}
	j := &jwkKey{}
	for _, f := range j.fields() {
		if m := o.Get(f.name); present(m) {
			*f.v = m.String()
		}
	}
	if m := o.Get("ext"); present(m) {
		b := m.ToBoolean()
		j.ext = &b
	}
	if m := o.Get("key_ops"); present(m) {
		if err := c.rt.ExportTo(m, &j.keyOps); err != nil {
			return nil, cryptoErr(errDataError, "importKey: the JWK's key_ops must be an array of strings")
		}
	}
	return j, nil
}

// jwkObject is a JWK as a JavaScript object.
func (c *webCrypto) jwkObject(j *jwkKey) sobek.Value {
	o := c.rt.NewObject()
	for _, f := range j.fields() {
		if *f.v != "" {
			set(o, f.name, *f.v)
		}
	}
	set(o, "key_ops", c.stringArray(j.keyOps))
	set(o, "ext", j.ext != nil && *j.ext)
	return o
}

// b64 is base64url without padding, JWK's encoding.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// unb64 decodes a JWK member (base64url; padding tolerated).
func unb64(member, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, cryptoErr(errDataError, "importKey: the JWK's %s is not base64url: %v", member, err)
	}
	return b, nil
}

// checkJWK checks a JWK's kty, ext, key_ops and use against the import.
func checkJWK(j *jwkKey, kty, use string, extractable bool, usages []string) error {
	if j.kty != kty {
		return cryptoErr(errDataError, "importKey: the JWK's kty is %q, want %q for this algorithm", j.kty, kty)
	}
	if j.ext != nil && !*j.ext && extractable {
		return cryptoErr(errDataError, "importKey: the JWK says ext: false, so the key cannot be imported as extractable")
	}
	if j.use != "" && j.use != use {
		return cryptoErr(errDataError, "importKey: the JWK's use is %q, want %q for this algorithm", j.use, use)
	}
	if j.keyOps != nil {
		for _, u := range usages {
			if !slices.Contains(j.keyOps, u) {
				return cryptoErr(errDataError, "importKey: usage %q is not among the JWK's key_ops %v", u, j.keyOps)
			}
		}
	}
	return nil
}

// jwkAlg is the JWK alg of a key, "" where the standard gives none (EC).
func jwkAlg(k *cryptoKey) string {
	bits := map[string]string{algSHA1: "1", algSHA256: "256", algSHA384: "384", algSHA512: "512"}[k.hash]
	switch k.alg {
	case algAESCBC, algAESCTR, algAESGCM, algAESKW:
		return fmt.Sprintf("A%d%s", k.length, strings.TrimPrefix(k.alg, "AES-"))
	case algHMAC:
		return "HS" + bits
	case algRSAPKCS1:
		return "RS" + bits
	case algRSAPSS:
		return "PS" + bits
	case algRSAOAEP:
		if k.hash == algSHA1 {
			return "RSA-OAEP"
		}
		return "RSA-OAEP-" + bits
	}
	return ""
}

// importParams are what importKey reads from its algorithm argument.
type importParams struct {
	hash   string
	curve  string
	length int // HMAC's length, 0 when not given
}

// importKey is crypto.subtle.importKey(format, keyData, algorithm,
// extractable, usages).
func (c *webCrypto) importKey(call sobek.FunctionCall) sobek.Value {
	const op = "importKey"
	return c.async(func() (cryptoJob, error) {
		format, err := formatArg(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		a, err := c.normalize(call.Argument(2), op)
		if err != nil {
			return nil, err
		}
		extractable := call.Argument(3).ToBoolean()
		usages, err := usagesArg(c.rt, call.Argument(4), op)
		if err != nil {
			return nil, err
		}
		var data []byte
		var j *jwkKey
		if format == "jwk" {
			j, err = c.readJWK(call.Argument(1))
		} else {
			data, err = bufferSource(call.Argument(1), "importKey: keyData")
		}
		if err != nil {
			return nil, err
		}
		var p importParams
		switch {
		case a.name == algHMAC:
			if p.hash, err = a.hash("hash"); err == nil && a.has("length") {
				p.length, err = a.int("length")
			}
		case rsaAlg(a.name):
			p.hash, err = a.hash("hash")
		case ecAlg(a.name):
			p.curve, err = curveArg(a)
		case a.name == algPBKDF2 && extractable:
			err = cryptoErr(errSyntax, "importKey: a PBKDF2 key cannot be extractable: pass false")
		}
		if err != nil {
			return nil, err
		}
		return func() (func() sobek.Value, error) {
			k, err := importGo(a.name, format, data, j, p, extractable, usages)
			if err != nil {
				return nil, err
			}
			if k.usages, err = checkUsages(op, k.alg, k.typ, usages); err != nil {
				return nil, err
			}
			return func() sobek.Value { return c.keyObject(k) }, nil
		}, nil
	})
}

// importGo makes the key importKey imports, but its usages.
func importGo(alg, format string, data []byte, j *jwkKey, p importParams, extractable bool, usages []string) (*cryptoKey, error) {
	k := &cryptoKey{alg: alg, extractable: extractable, hash: p.hash, curve: p.curve}
	switch {
	case aesAlg(alg) || alg == algHMAC || alg == algPBKDF2:
		return importSecret(k, format, data, j, p, usages)
	case ecAlg(alg):
		return importEC(k, format, data, j, usages)
	default:
		return importRSA(k, format, data, j, usages)
	}
}

// importSecret imports an AES, HMAC or PBKDF2 key.
func importSecret(k *cryptoKey, format string, data []byte, j *jwkKey, p importParams, usages []string) (*cryptoKey, error) {
	k.typ = "secret"
	switch {
	case format == "jwk" && k.alg != algPBKDF2:
		use := "enc"
		if k.alg == algHMAC {
			use = "sig"
		}
		if err := checkJWK(j, "oct", use, k.extractable, usages); err != nil {
			return nil, err
		}
		if j.k == "" {
			return nil, cryptoErr(errDataError, "importKey: the JWK has no k (the key's bytes)")
		}
		b, err := unb64("k", j.k)
		if err != nil {
			return nil, err
		}
		data = b
	case format != "raw":
		return nil, cryptoErr(errNotSupported, "importKey: an %s key is imported as %s, not %s", k.alg, orFormats(k.alg), format)
	}
	k.secret, k.length = data, len(data)*8
	switch {
	case aesAlg(k.alg):
		if k.length != 128 && k.length != 192 && k.length != 256 {
			return nil, cryptoErr(errDataError, "importKey: an %s key has 16, 24 or 32 bytes, got %d", k.alg, len(data))
		}
	case k.alg == algHMAC:
		if k.length == 0 {
			return nil, cryptoErr(errDataError, "importKey: an HMAC key cannot be empty")
		}
		if p.length != 0 && p.length != k.length {
			return nil, cryptoErr(errDataError, "importKey: the HMAC key has %d bits, but the algorithm's length says %d", k.length, p.length)
		}
	}
	if j != nil && j.alg != "" && j.alg != jwkAlg(k) {
		return nil, cryptoErr(errDataError, "importKey: the JWK's alg is %q, want %q for this key", j.alg, jwkAlg(k))
	}
	return k, nil
}

// orFormats names the formats of an algorithm's keys.
func orFormats(alg string) string {
	switch {
	case alg == algPBKDF2:
		return "raw"
	case aesAlg(alg) || alg == algHMAC:
		return "raw or jwk"
	case ecAlg(alg):
		return "raw (public), spki (public), pkcs8 (private) or jwk"
	}
	return "spki (public), pkcs8 (private) or jwk"
}

// importEC imports an ECDSA or ECDH key.
func importEC(k *cryptoKey, format string, data []byte, j *jwkKey, usages []string) (*cryptoKey, error) {
	curve := curves[k.curve]
	switch format {
	case "raw":
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, data)
		if err != nil {
			return nil, cryptoErr(errDataError, "importKey: not an uncompressed %s point: %v", k.curve, err)
		}
		k.typ, k.ecPub = "public", pub
	case "spki":
		pub, err := parseSPKI[*ecdsa.PublicKey](data, "EC")
		if err != nil {
			return nil, err
		}
		k.typ, k.ecPub = "public", pub
	case "pkcs8":
		priv, err := parsePKCS8[*ecdsa.PrivateKey](data, "EC")
		if err != nil {
			return nil, err
		}
		k.typ, k.ecPriv, k.ecPub = "private", priv, &priv.PublicKey
	case "jwk":
		if err := importECJWK(k, j, usages); err != nil {
			return nil, err
		}
	}
	// As in k6, an SPKI, PKCS #8 or JWK key's own curve wins over the
	// algorithm's namedCurve (k6's examples import a P-521 JWK as P-256);
	// the key's algorithm then names its real curve.
	k.curve = k.ecPub.Curve.Params().Name
	return k, nil
}

// importECJWK imports an EC JWK (public with x and y, private with d too).
func importECJWK(k *cryptoKey, j *jwkKey, usages []string) error {
	use := "sig"
	if k.alg == algECDH {
		use = "enc"
	}
	if err := checkJWK(j, "EC", use, k.extractable, usages); err != nil {
		return err
	}
	curve, ok := curves[j.crv]
	if !ok {
		return cryptoErr(errNotSupported, "importKey: the JWK's crv %q is not supported: want P-256, P-384 or P-521", j.crv)
	}
	k.curve = j.crv
	size := (curve.Params().BitSize + 7) / 8
	x, err := unb64("x", j.x)
	if err != nil {
		return err
	}
	y, err := unb64("y", j.y)
	if err != nil {
		return err
	}
	if len(x) != size || len(y) != size {
		return cryptoErr(errDataError, "importKey: the JWK's x and y must have %d bytes on %s", size, k.curve)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
	if err != nil {
		return cryptoErr(errDataError, "importKey: the JWK's x and y are not a point of %s: %v", k.curve, err)
	}
	k.typ, k.ecPub = "public", pub
	if j.d == "" {
		return nil
	}
	d, err := unb64("d", j.d)
	if err != nil {
		return err
	}
	priv, err := ecdsa.ParseRawPrivateKey(curve, d)
	if err != nil {
		return cryptoErr(errDataError, "importKey: the JWK's d is not a %s private key: %v", k.curve, err)
	}
	if !priv.PublicKey.Equal(pub) {
		return cryptoErr(errDataError, "importKey: the JWK's x and y are not the public key of its d")
	}
	k.typ, k.ecPriv, k.ecPub = "private", priv, &priv.PublicKey
	return nil
}

// keyKind names a parsed key's type.
func keyKind(key any) string {
	switch key.(type) {
	case *rsa.PublicKey, *rsa.PrivateKey:
		return "RSA"
	case *ecdsa.PublicKey, *ecdsa.PrivateKey:
		return "EC"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", key), "*")
}

// importRSA imports an RSA key.
func importRSA(k *cryptoKey, format string, data []byte, j *jwkKey, usages []string) (*cryptoKey, error) {
	switch format {
	case "spki":
		pub, err := parseSPKI[*rsa.PublicKey](data, "RSA")
		if err != nil {
			return nil, err
		}
		k.typ, k.rsaPub = "public", pub
	case "pkcs8":
		priv, err := parsePKCS8[*rsa.PrivateKey](data, "RSA")
		if err != nil {
			return nil, err
		}
		k.typ, k.rsaPriv, k.rsaPub = "private", priv, &priv.PublicKey
	case "jwk":
		use := "sig"
		if k.alg == algRSAOAEP {
			use = "enc"
		}
		if err := checkJWK(j, "RSA", use, k.extractable, usages); err != nil {
			return nil, err
		}
		if err := importRSAJWK(k, j); err != nil {
			return nil, err
		}
		if j.alg != "" && j.alg != jwkAlg(k) {
			return nil, cryptoErr(errDataError, "importKey: the JWK's alg is %q, want %q for this key", j.alg, jwkAlg(k))
		}
	default:
		return nil, cryptoErr(errNotSupported, "importKey: an %s key is imported as %s, not %s", k.alg, orFormats(k.alg), format)
	}
	return k, nil
}

// importRSAJWK reads an RSA JWK's numbers: n and e, and d, p, q, dp, dq
// and qi for a private key.
func importRSAJWK(k *cryptoKey, j *jwkKey) error {
	num := func(member, s string) (*big.Int, error) {
		if s == "" {
			return nil, cryptoErr(errDataError, "importKey: the RSA JWK has no %s", member)
		}
		b, err := unb64(member, s)
		if err != nil {
			return nil, err
		}
		return new(big.Int).SetBytes(b), nil
	}
	n, err := num("n", j.n)
	if err != nil {
		return err
	}
	e, err := num("e", j.e)
	if err != nil {
		return err
	}
	if !e.IsInt64() || e.Int64() > 1<<31-1 || e.Int64() < 3 {
		return cryptoErr(errDataError, "importKey: the RSA JWK's e is out of range")
	}
	pub := &rsa.PublicKey{N: n, E: int(e.Int64())}
	k.typ, k.rsaPub = "public", pub
	if j.d == "" {
		return nil
	}
	priv := &rsa.PrivateKey{PublicKey: *pub}
	if priv.D, err = num("d", j.d); err != nil {
		return err
	}
	p, err := num("p", j.p)
	if err != nil {
		return err
	}
	q, err := num("q", j.q)
	if err != nil {
		return err
	}
	priv.Primes = []*big.Int{p, q}
	if err := priv.Validate(); err != nil {
		return cryptoErr(errDataError, "importKey: the RSA JWK is not a valid private key: %v", err)
	}
	priv.Precompute()
	k.typ, k.rsaPriv, k.rsaPub = "private", priv, &priv.PublicKey
	return nil
}

// exportKey is crypto.subtle.exportKey(format, key): an ArrayBuffer (raw,
// spki, pkcs8) or a JWK object.
func (c *webCrypto) exportKey(call sobek.FunctionCall) sobek.Value {
	const op = "exportKey"
	return c.async(func() (cryptoJob, error) {
		format, err := formatArg(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		k, err := c.keyArg(call.Argument(1), op, "the key")
		if err != nil {
			return nil, err
		}
		if !k.extractable {
			return nil, cryptoErr(errInvalidAccess, "exportKey: the key is not extractable (it was made with extractable false)")
		}
		return func() (func() sobek.Value, error) {
			if format == "jwk" {
				j, err := exportJWK(k)
				if err != nil {
					return nil, err
				}
				return func() sobek.Value { return c.jwkObject(j) }, nil
			}
			b, err := exportBytes(k, format)
			if err != nil {
				return nil, err
			}
			return c.arrayBuffer(b), nil
		}, nil
	})
}

// exportBytes is a key in the raw, spki or pkcs8 format.
func exportBytes(k *cryptoKey, format string) ([]byte, error) {
	wrongType := func() error {
		return cryptoErr(errInvalidAccess, "exportKey: a %s %s key cannot be exported as %s", k.typ, k.alg, format)
	}
	switch {
	case k.typ == "secret" && k.alg != algPBKDF2 && format == "raw":
		return slices.Clone(k.secret), nil
	case k.typ == "secret":
		return nil, cryptoErr(errNotSupported, "exportKey: an %s key is exported as raw or jwk, not %s", k.alg, format)
	case format == "raw" && rsaAlg(k.alg):
		return nil, cryptoErr(errNotSupported, "exportKey: an RSA key is exported as spki, pkcs8 or jwk, not raw")
	case format == "raw" && k.typ == "public":
		b, err := k.ecPub.Bytes()
		if err != nil {
			return nil, cryptoErr(errOperation, "exportKey: %v", err)
		}
		return b, nil
	case format == "spki" && k.typ == "public":
		var pub any = k.ecPub
		if rsaAlg(k.alg) {
			pub = k.rsaPub
		}
		b, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return nil, cryptoErr(errOperation, "exportKey: %v", err)
		}
		return b, nil
	case format == "pkcs8" && k.typ == "private":
		var priv any = k.ecPriv
		if rsaAlg(k.alg) {
			priv = k.rsaPriv
		}
		b, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, cryptoErr(errOperation, "exportKey: %v", err)
		}
		return b, nil
	}
	return nil, wrongType()
}

// exportJWK is a key as a JWK.
func exportJWK(k *cryptoKey) (*jwkKey, error) {
	ext := k.extractable
	j := &jwkKey{alg: jwkAlg(k), ext: &ext, keyOps: slices.Clone(k.usages)}
	switch {
	case k.alg == algPBKDF2:
		return nil, cryptoErr(errNotSupported, "exportKey: a PBKDF2 key cannot be exported")
	case k.typ == "secret":
		j.kty, j.k = "oct", b64(k.secret)
	case ecAlg(k.alg):
		raw, err := k.ecPub.Bytes()
		if err != nil {
			return nil, cryptoErr(errOperation, "exportKey: %v", err)
		}
		size := (len(raw) - 1) / 2
		j.kty, j.crv, j.x, j.y = "EC", k.curve, b64(raw[1:1+size]), b64(raw[1+size:])
		if k.ecPriv != nil {
			d, err := k.ecPriv.Bytes()
			if err != nil {
				return nil, cryptoErr(errOperation, "exportKey: %v", err)
			}
			j.d = b64(d)
		}
	default: // RSA
		j.kty, j.n, j.e = "RSA", b64(k.rsaPub.N.Bytes()), b64(bigEndian(uint64(k.rsaPub.E)))
		if p := k.rsaPriv; p != nil {
			if len(p.Primes) != 2 {
				return nil, cryptoErr(errNotSupported, "exportKey: an RSA key of %d primes cannot be a JWK here", len(p.Primes))
			}
			if p.Precomputed.Dp == nil || p.Precomputed.Dq == nil || p.Precomputed.Qinv == nil {
				return nil, cryptoErr(errOperation, "exportKey: the RSA key lacks its CRT values")
			}
			j.d, j.p, j.q = b64(p.D.Bytes()), b64(p.Primes[0].Bytes()), b64(p.Primes[1].Bytes())
			j.dp, j.dq, j.qi = b64(p.Precomputed.Dp.Bytes()), b64(p.Precomputed.Dq.Bytes()), b64(p.Precomputed.Qinv.Bytes())
		}
	}
	return j, nil
}

// parseSPKI parses an SPKI public key that must be a T (kind names it in
// the error).
func parseSPKI[T any](data []byte, kind string) (T, error) {
	var zero T
	key, err := x509.ParsePKIXPublicKey(data)
	if err != nil {
		return zero, cryptoErr(errDataError, "importKey: not an SPKI public key: %v", err)
	}
	pub, ok := key.(T)
	if !ok {
		return zero, cryptoErr(errDataError, "importKey: the SPKI holds a %s key, not an %s one", keyKind(key), kind)
	}
	return pub, nil
}

// parsePKCS8 parses a PKCS #8 private key that must be a T.
func parsePKCS8[T any](data []byte, kind string) (T, error) {
	var zero T
	key, err := x509.ParsePKCS8PrivateKey(data)
	if err != nil {
		return zero, cryptoErr(errDataError, "importKey: not a PKCS #8 private key: %v", err)
	}
	priv, ok := key.(T)
	if !ok {
		return zero, cryptoErr(errDataError, "importKey: the PKCS #8 holds a %s key, not an %s one", keyKind(key), kind)
	}
	return priv, nil
}
