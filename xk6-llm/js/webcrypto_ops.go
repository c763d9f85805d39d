package js

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"math/big"
	"slices"

	"github.com/grafana/sobek"
)

// webCryptoHashes are digest's hashes, by WebCrypto's names (their
// packages are linked in by mod_crypto.go).
var webCryptoHashes = map[string]crypto.Hash{
	algSHA1: crypto.SHA1, algSHA256: crypto.SHA256, algSHA384: crypto.SHA384, algSHA512: crypto.SHA512,
}

// digestOf is data's digest with hash.
func digestOf(hash string, data []byte) []byte {
	h := webCryptoHashes[hash].New()
	h.Write(data)
	return h.Sum(nil)
}

// digest is crypto.subtle.digest(algorithm, data).
func (c *webCrypto) digest(call sobek.FunctionCall) sobek.Value {
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), "digest")
		if err != nil {
			return nil, err
		}
		data, err := bufferSource(call.Argument(1), "digest: data")
		if err != nil {
			return nil, err
		}
		return func() (func() sobek.Value, error) { return c.arrayBuffer(digestOf(a.name, data)), nil }, nil
	})
}

// cipherParams are what encrypt and decrypt read from their algorithm.
type cipherParams struct {
	iv, aad, label []byte
	counterBits    int // AES-CTR's length
	tagBits        int // AES-GCM's tagLength
}

// encrypt is crypto.subtle.encrypt(algorithm, key, data).
func (c *webCrypto) encrypt(call sobek.FunctionCall) sobek.Value {
	return c.cipher(call, "encrypt")
}

// decrypt is crypto.subtle.decrypt(algorithm, key, data).
func (c *webCrypto) decrypt(call sobek.FunctionCall) sobek.Value {
	return c.cipher(call, "decrypt")
}

// cipher is encrypt or decrypt (op).
func (c *webCrypto) cipher(call sobek.FunctionCall, op string) sobek.Value {
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		k, err := c.keyArg(call.Argument(1), op, "the key")
		if err != nil {
			return nil, err
		}
		data, err := bufferSource(call.Argument(2), op+": data")
		if err != nil {
			return nil, err
		}
		if err := k.usableFor(op, a.name, op); err != nil {
			return nil, err
		}
		p, err := readCipherParams(a)
		if err != nil {
			return nil, err
		}
		return func() (func() sobek.Value, error) {
			out, err := cipherGo(op, a.name, k, p, data)
			if err != nil {
				return nil, err
			}
			return c.arrayBuffer(out), nil
		}, nil
	})
}

// readCipherParams reads and checks an encryption algorithm's parameters.
func readCipherParams(a algorithm) (cipherParams, error) {
	var p cipherParams
	var err error
	switch a.name {
	case algAESCBC:
		if p.iv, err = a.bytes("iv"); err == nil && len(p.iv) != 16 {
			err = cryptoErr(errOperation, "%s: AES-CBC's iv must have 16 bytes, got %d", a.op, len(p.iv))
		}
	case algAESCTR:
		if p.iv, err = a.bytes("counter"); err != nil {
			return p, err
		}
		if len(p.iv) != 16 {
			return p, cryptoErr(errOperation, "%s: AES-CTR's counter must have 16 bytes, got %d", a.op, len(p.iv))
		}
		if p.counterBits, err = a.int("length"); err == nil && (p.counterBits < 1 || p.counterBits > 128) {
			err = cryptoErr(errOperation, "%s: AES-CTR's length (counter bits) must be within 1…128, got %d", a.op, p.counterBits)
		}
	case algAESGCM:
		if p.iv, err = a.bytes("iv"); err != nil {
			return p, err
		}
		if len(p.iv) == 0 {
			return p, cryptoErr(errOperation, "%s: AES-GCM's iv cannot be empty", a.op)
		}
		if a.has("additionalData") {
			if p.aad, err = a.bytes("additionalData"); err != nil {
				return p, err
			}
		}
		p.tagBits = 128
		if a.has("tagLength") {
			if p.tagBits, err = a.int("tagLength"); err != nil {
				return p, err
			}
		}
		switch {
		case !slices.Contains([]int{32, 64, 96, 104, 112, 120, 128}, p.tagBits):
			err = cryptoErr(errOperation, "%s: AES-GCM's tagLength must be 32, 64, 96, 104, 112, 120 or 128, got %d", a.op, p.tagBits)
		case p.tagBits < 96:
			err = cryptoErr(errNotSupported, "%s: AES-GCM's tagLength %d is not supported (Go's crypto/cipher: 96 to 128)", a.op, p.tagBits)
		case p.tagBits != 128 && len(p.iv) != 12:
			err = cryptoErr(errNotSupported, "%s: AES-GCM with a %d-byte iv takes tagLength 128 only (Go's crypto/cipher)", a.op, len(p.iv))
		}
	case algRSAOAEP:
		if a.has("label") {
			p.label, err = a.bytes("label")
		}
	}
	return p, err
}

// cipherGo encrypts or decrypts (op) data with key k.
func cipherGo(op, alg string, k *cryptoKey, p cipherParams, data []byte) ([]byte, error) {
	enc := op == "encrypt"
	if alg == algRSAOAEP {
		h := webCryptoHashes[k.hash].New()
		if enc {
			if k.typ != "public" {
				return nil, cryptoErr(errInvalidAccess, "encrypt: RSA-OAEP encrypts with a public key, not a %s one", k.typ)
			}
			out, err := rsa.EncryptOAEP(h, rand.Reader, k.rsaPub, data, p.label)
			if err != nil {
				return nil, cryptoErr(errOperation, "encrypt: RSA-OAEP: %v", err)
			}
			return out, nil
		}
		if k.typ != "private" {
			return nil, cryptoErr(errInvalidAccess, "decrypt: RSA-OAEP decrypts with a private key, not a %s one", k.typ)
		}
		out, err := rsa.DecryptOAEP(h, rand.Reader, k.rsaPriv, data, p.label)
		if err != nil {
			return nil, cryptoErr(errOperation, "decrypt: RSA-OAEP: %v", err)
		}
		return out, nil
	}
	block, err := aes.NewCipher(k.secret)
	if err != nil {
		return nil, cryptoErr(errOperation, "%s: %v", op, err)
	}
	switch alg {
	case algAESCBC:
		if enc {
			pad := 16 - len(data)%16
			out := append(slices.Clone(data), bytes.Repeat([]byte{byte(pad)}, pad)...)
			cipher.NewCBCEncrypter(block, p.iv).CryptBlocks(out, out)
			return out, nil
		}
		if len(data) == 0 || len(data)%16 != 0 {
			return nil, cryptoErr(errOperation, "decrypt: AES-CBC: the data's %d bytes are not whole 16-byte blocks", len(data))
		}
		out := slices.Clone(data)
		cipher.NewCBCDecrypter(block, p.iv).CryptBlocks(out, out)
		pad := int(out[len(out)-1])
		if pad == 0 || pad > 16 || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
			return nil, cryptoErr(errOperation, "decrypt: AES-CBC: bad padding (wrong key or iv, or altered data)")
		}
		return out[:len(out)-pad], nil
	case algAESCTR:
		return aesCTR(op, block, p.iv, p.counterBits, data)
	}
	var gcm cipher.AEAD
	if len(p.iv) == 12 {
		gcm, err = cipher.NewGCMWithTagSize(block, p.tagBits/8)
	} else {
		gcm, err = cipher.NewGCMWithNonceSize(block, len(p.iv))
	}
	if err != nil {
		return nil, cryptoErr(errOperation, "%s: AES-GCM: %v", op, err)
	}
	if enc {
		return gcm.Seal(nil, p.iv, data, p.aad), nil
	}
	out, err := gcm.Open(nil, p.iv, data, p.aad)
	if err != nil {
		return nil, cryptoErr(errOperation, "decrypt: AES-GCM: %v (wrong key, iv or additionalData, or altered data)", err)
	}
	return out, nil
}

// aesCTR is AES-CTR as WebCrypto has it: the rightmost counterBits bits of
// the counter block count the blocks and wrap around, the others stay; a
// data so long that the counter would repeat is an OperationError.
func aesCTR(op string, block cipher.Block, counter []byte, counterBits int, data []byte) ([]byte, error) {
	blocks := new(big.Int).SetInt64(int64((len(data) + 15) / 16))
	space := new(big.Int).Lsh(big.NewInt(1), uint(counterBits))
	if blocks.Cmp(space) > 0 {
		return nil, cryptoErr(errOperation, "%s: AES-CTR: %d bytes need more blocks than a %d-bit counter counts", op, len(data), counterBits)
	}
	ctr := new(big.Int).SetBytes(counter)
	low := new(big.Int).Mod(ctr, space)
	out := make([]byte, len(data))
	if new(big.Int).Add(low, blocks).Cmp(space) <= 0 { // the counter does not wrap: plain CTR
		cipher.NewCTR(block, counter).XORKeyStream(out, data)
		return out, nil
	}
	high := new(big.Int).Sub(ctr, low)
	cb, ks := make([]byte, 16), make([]byte, 16)
	for i := 0; i < len(data); i += 16 {
		n := new(big.Int).Add(low, big.NewInt(int64(i/16)))
		n.Mod(n, space).Add(n, high).FillBytes(cb)
		block.Encrypt(ks, cb)
		for j := i; j < min(i+16, len(data)); j++ {
			out[j] = data[j] ^ ks[j-i]
		}
	}
	return out, nil
}

// signParams are what sign and verify read from their algorithm.
type signParams struct {
	hash string // ECDSA's
	salt int    // RSA-PSS's saltLength
}

// sign is crypto.subtle.sign(algorithm, key, data).
func (c *webCrypto) sign(call sobek.FunctionCall) sobek.Value {
	return c.signVerify(call, "sign")
}

// verify is crypto.subtle.verify(algorithm, key, signature, data).
func (c *webCrypto) verify(call sobek.FunctionCall) sobek.Value {
	return c.signVerify(call, "verify")
}

// signVerify is sign or verify (op).
func (c *webCrypto) signVerify(call sobek.FunctionCall, op string) sobek.Value {
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		k, err := c.keyArg(call.Argument(1), op, "the key")
		if err != nil {
			return nil, err
		}
		var sig []byte
		dataArg := call.Argument(2)
		if op == "verify" {
			if sig, err = bufferSource(call.Argument(2), "verify: signature"); err != nil {
				return nil, err
			}
			dataArg = call.Argument(3)
		}
		data, err := bufferSource(dataArg, op+": data")
		if err != nil {
			return nil, err
		}
		if err := k.usableFor(op, a.name, op); err != nil {
			return nil, err
		}
		var p signParams
		switch a.name {
		case algECDSA:
			p.hash, err = a.hash("hash")
		case algRSAPSS:
			if p.salt, err = a.int("saltLength"); err == nil && p.salt == 0 {
				err = cryptoErr(errNotSupported, "%s: RSA-PSS with saltLength 0 is not supported (Go's crypto/rsa reads 0 as "+
					"'automatic'): give the hash's length (32 for SHA-256)", op)
			}
		}
		if err != nil {
			return nil, err
		}
		if op == "sign" {
			return func() (func() sobek.Value, error) {
				out, err := signGo(k, p, data)
				if err != nil {
					return nil, err
				}
				return c.arrayBuffer(out), nil
			}, nil
		}
		return func() (func() sobek.Value, error) {
			ok := verifyGo(k, p, sig, data)
			return func() sobek.Value { return c.rt.ToValue(ok) }, nil
		}, nil
	})
}

// ecdsaSig is an ECDSA signature as ASN.1 holds it.
type ecdsaSig struct{ R, S *big.Int }

// signGo signs data with k.
func signGo(k *cryptoKey, p signParams, data []byte) ([]byte, error) {
	if k.alg == algHMAC {
		m := hmac.New(webCryptoHashes[k.hash].New, k.secret)
		m.Write(data)
		return m.Sum(nil), nil
	}
	if k.typ != "private" {
		return nil, cryptoErr(errInvalidAccess, "sign: %s signs with a private key, not a %s one", k.alg, k.typ)
	}
	switch k.alg {
	case algECDSA:
		der, err := ecdsa.SignASN1(rand.Reader, k.ecPriv, digestOf(p.hash, data))
		if err != nil {
			return nil, cryptoErr(errOperation, "sign: ECDSA: %v", err)
		}
		var s ecdsaSig
		if _, err := asn1.Unmarshal(der, &s); err != nil {
			return nil, cryptoErr(errOperation, "sign: ECDSA: %v", err)
		}
		size := (k.ecPub.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size) // r || s, as WebCrypto has it (IEEE P1363)
		s.R.FillBytes(out[:size])
		s.S.FillBytes(out[size:])
		return out, nil
	case algRSAPKCS1:
		out, err := rsa.SignPKCS1v15(nil, k.rsaPriv, webCryptoHashes[k.hash], digestOf(k.hash, data))
		if err != nil {
			return nil, cryptoErr(errOperation, "sign: RSASSA-PKCS1-v1_5: %v", err)
		}
		return out, nil
	}
	out, err := rsa.SignPSS(rand.Reader, k.rsaPriv, webCryptoHashes[k.hash], digestOf(k.hash, data), &rsa.PSSOptions{SaltLength: p.salt})
	if err != nil {
		return nil, cryptoErr(errOperation, "sign: RSA-PSS: %v", err)
	}
	return out, nil
}

// verifyGo checks signature sig of data with k; a malformed signature is
// false, as WebCrypto has it.
func verifyGo(k *cryptoKey, p signParams, sig, data []byte) bool {
	switch k.alg {
	case algHMAC:
		m := hmac.New(webCryptoHashes[k.hash].New, k.secret)
		m.Write(data)
		return hmac.Equal(m.Sum(nil), sig)
	case algECDSA:
		size := (k.ecPub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		der, err := asn1.Marshal(ecdsaSig{R: new(big.Int).SetBytes(sig[:size]), S: new(big.Int).SetBytes(sig[size:])})
		return err == nil && ecdsa.VerifyASN1(k.ecPub, digestOf(p.hash, data), der)
	case algRSAPKCS1:
		return rsa.VerifyPKCS1v15(k.rsaPub, webCryptoHashes[k.hash], digestOf(k.hash, data), sig) == nil
	}
	return rsa.VerifyPSS(k.rsaPub, webCryptoHashes[k.hash], digestOf(k.hash, data), sig, &rsa.PSSOptions{SaltLength: p.salt}) == nil
}

// deriveParams are what deriveBits and deriveKey read from their
// algorithm.
type deriveParams struct {
	alg        string
	public     *cryptoKey // ECDH's
	salt       []byte     // PBKDF2's
	iterations int
	hash       string
}

// readDeriveParams reads a derivation's algorithm and checks its base key.
func (c *webCrypto) readDeriveParams(a algorithm, base *cryptoKey, usage string) (deriveParams, error) {
	p := deriveParams{alg: a.name}
	if err := base.usableFor(a.op, a.name, usage); err != nil {
		return p, err
	}
	var err error
	if a.name == algECDH {
		if base.typ != "private" {
			return p, cryptoErr(errInvalidAccess, "%s: ECDH's base key must be a private key, not a %s one", a.op, base.typ)
		}
		if !a.has("public") {
			return p, cryptoErr(errTypeError, "%s: ECDH needs public (the other party's public key) in its parameters", a.op)
		}
		if p.public, err = c.keyArg(a.get("public"), a.op, "ECDH's public"); err != nil {
			return p, err
		}
		switch {
		case p.public.typ != "public":
			err = cryptoErr(errInvalidAccess, "%s: ECDH's public must be a public key, not a %s one", a.op, p.public.typ)
		case p.public.alg != algECDH:
			err = cryptoErr(errInvalidAccess, "%s: ECDH's public is an %s key, not an ECDH one", a.op, p.public.alg)
		case p.public.curve != base.curve:
			err = cryptoErr(errInvalidAccess, "%s: ECDH's public key is on %s, the base key on %s", a.op, p.public.curve, base.curve)
		}
		return p, err
	}
	if p.salt, err = a.bytes("salt"); err != nil {
		return p, err
	}
	if p.iterations, err = a.int("iterations"); err != nil {
		return p, err
	}
	if p.iterations == 0 {
		return p, cryptoErr(errOperation, "%s: PBKDF2's iterations cannot be 0", a.op)
	}
	p.hash, err = a.hash("hash")
	return p, err
}

// deriveGo derives bits (a multiple of 8; -1: all ECDH gives) from base.
func deriveGo(op string, p deriveParams, base *cryptoKey, bits int) ([]byte, error) {
	if p.alg == algPBKDF2 {
		out, err := pbkdf2.Key(webCryptoHashes[p.hash].New, string(base.secret), p.salt, p.iterations, bits/8)
		if err != nil {
			return nil, cryptoErr(errOperation, "%s: PBKDF2: %v", op, err)
		}
		return out, nil
	}
	priv, err := base.ecPriv.ECDH()
	if err != nil {
		return nil, cryptoErr(errOperation, "%s: ECDH: %v", op, err)
	}
	pub, err := p.public.ecPub.ECDH()
	if err != nil {
		return nil, cryptoErr(errOperation, "%s: ECDH: %v", op, err)
	}
	secret, err := priv.ECDH(pub)
	if err != nil {
		return nil, cryptoErr(errOperation, "%s: ECDH: %v", op, err)
	}
	if bits < 0 {
		return secret, nil
	}
	if bits/8 > len(secret) {
		return nil, cryptoErr(errOperation, "%s: ECDH on %s gives %d bits, fewer than the %d asked for", op, base.curve, len(secret)*8, bits)
	}
	return secret[:bits/8], nil
}

// deriveBits is crypto.subtle.deriveBits(algorithm, baseKey, length):
// length null takes all ECDH's shared secret; PBKDF2 needs a length.
func (c *webCrypto) deriveBits(call sobek.FunctionCall) sobek.Value {
	const op = "deriveBits"
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		base, err := c.keyArg(call.Argument(1), op, "the base key")
		if err != nil {
			return nil, err
		}
		bits := -1
		if l := call.Argument(2); present(l) {
			f := l.ToFloat()
			if f != f || f < 0 || f != float64(int64(f)) || f > 1<<31 {
				return nil, cryptoErr(errTypeError, "deriveBits: length must be a whole number of bits, got %s", l.String())
			}
			bits = int(f)
		}
		switch {
		case bits < 0 && a.name == algPBKDF2:
			return nil, cryptoErr(errOperation, "deriveBits: PBKDF2 needs a length in bits")
		case bits == 0:
			return nil, cryptoErr(errOperation, "deriveBits: length cannot be 0")
		case bits > 0 && bits%8 != 0:
			return nil, cryptoErr(errOperation, "deriveBits: length must be a multiple of 8 bits here, got %d", bits)
		}
		p, err := c.readDeriveParams(a, base, op)
		if err != nil {
			return nil, err
		}
		return func() (func() sobek.Value, error) {
			out, err := deriveGo(op, p, base, bits)
			if err != nil {
				return nil, err
			}
			return c.arrayBuffer(out), nil
		}, nil
	})
}

// deriveKey is crypto.subtle.deriveKey(algorithm, baseKey,
// derivedKeyAlgorithm, extractable, usages): an AES or HMAC key of the
// bits derived.
func (c *webCrypto) deriveKey(call sobek.FunctionCall) sobek.Value {
	const op = "deriveKey"
	return c.async(func() (cryptoJob, error) {
		a, err := c.normalize(call.Argument(0), op)
		if err != nil {
			return nil, err
		}
		base, err := c.keyArg(call.Argument(1), op, "the base key")
		if err != nil {
			return nil, err
		}
		dk, err := c.normalize(call.Argument(2), "get key length")
		if err != nil {
			return nil, cryptoErr(errNotSupported, "deriveKey: the derived key's algorithm must be AES-CBC, AES-CTR, "+
				"AES-GCM, AES-KW or HMAC (%v)", err)
		}
		dk.op = op
		length, hash, err := secretLength(dk)
		if err != nil {
			return nil, err
		}
		extractable := call.Argument(3).ToBoolean()
		usages, err := usagesArg(c.rt, call.Argument(4), op)
		if err != nil {
			return nil, err
		}
		if usages, err = checkUsages(op, dk.name, "secret", usages); err != nil {
			return nil, err
		}
		p, err := c.readDeriveParams(a, base, op)
		if err != nil {
			return nil, err
		}
		return func() (func() sobek.Value, error) {
			b, err := deriveGo(op, p, base, length)
			if err != nil {
				return nil, err
			}
			k := &cryptoKey{typ: "secret", extractable: extractable, alg: dk.name, length: length, hash: hash, usages: usages, secret: b}
			return func() sobek.Value { return c.keyObject(k) }, nil
		}, nil
	})
}
