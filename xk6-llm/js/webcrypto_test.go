package js

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// cryptoHelpers are the helpers the WebCrypto test scripts share: hex and
// bytes conversions and an assertion.
const cryptoHelpers = `
function hex(buf) { return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join(''); }
function unhex(s) { const b = new Uint8Array(s.length / 2); for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16); return b; }
function utf8(s) { return new TextEncoder().encode(s); }
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + got + ', want ' + want); }
`

// TestWebCryptoGivesPublishedVectors checks crypto.subtle against published
// vectors: FIPS 180 "abc" digests, RFC 4231 test case 2 (HMAC), the GCM
// specification's test cases 1 and 2 (AES-GCM), NIST SP 800-38A F.2.1 and
// F.5.1 (AES-CBC, AES-CTR) and RFC 6070 (PBKDF2-HMAC-SHA1).
func TestWebCryptoGivesPublishedVectors(t *testing.T) {
	r := runIteration(context.Background(), t, cryptoHelpers+`
export default async function () {
  const abc = utf8('abc');
  eq(hex(await crypto.subtle.digest('SHA-1', abc)), 'a9993e364706816aba3e25717850c26c9cd0d89d', 'SHA-1');
  eq(hex(await crypto.subtle.digest({ name: 'sha-256' }, abc.buffer)),
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'SHA-256 (name in any case, ArrayBuffer)');
  eq(hex(await crypto.subtle.digest('SHA-384', new DataView(abc.buffer))),
    'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7', 'SHA-384 (DataView)');
  eq(hex(await crypto.subtle.digest('SHA-512', abc)),
    'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f', 'SHA-512');
  const padded = new Uint8Array([0, 0x61, 0x62, 0x63, 0]);
  eq(hex(await crypto.subtle.digest('SHA-1', padded.subarray(1, 4))), 'a9993e364706816aba3e25717850c26c9cd0d89d', 'a view of part of a buffer');

  const data = utf8('what do ya want for nothing?');
  const macs = {
    'SHA-256': '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    'SHA-384': 'af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649',
    'SHA-512': '164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737',
  };
  for (const [hash, want] of Object.entries(macs)) {
    const key = await crypto.subtle.importKey('raw', utf8('Jefe'), { name: 'HMAC', hash }, false, ['sign', 'verify']);
    const sig = await crypto.subtle.sign('HMAC', key, data);
    eq(hex(sig), want, 'HMAC ' + hash);
    eq(await crypto.subtle.verify('HMAC', key, sig, data), true, 'verify HMAC ' + hash);
    eq(await crypto.subtle.verify('HMAC', key, sig, utf8('what do ya want for something?')), false, 'verify altered ' + hash);
  }

  const zero16 = new Uint8Array(16), iv12 = new Uint8Array(12);
  const gcmKey = await crypto.subtle.importKey('raw', zero16, 'AES-GCM', true, ['encrypt', 'decrypt']);
  eq(hex(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: iv12 }, gcmKey, new Uint8Array(0))),
    '58e2fccefa7e3061367f1d57a4e7455a', 'GCM test case 1 (tag only)');
  const tc2 = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: iv12 }, gcmKey, zero16);
  eq(hex(tc2), '0388dace60b6a392f328c2b971b2fe78' + 'ab6e47d42cec13bdf53a67b21257bddf', 'GCM test case 2');
  eq(hex(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: iv12 }, gcmKey, tc2)), hex(zero16), 'GCM test case 2 decrypted');

  const nistKey = unhex('2b7e151628aed2a6abf7158809cf4f3c');
  const p1 = unhex('6bc1bee22e409f96e93d7e117393172a' + 'ae2d8a571e03ac9c9eb76fac45af8e51');
  const cbc = await crypto.subtle.importKey('raw', nistKey, { name: 'AES-CBC' }, false, ['encrypt', 'decrypt']);
  const cbcOut = await crypto.subtle.encrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, cbc, p1);
  eq(hex(cbcOut).slice(0, 64), '7649abac8119b246cee98e9b12e9197d' + '5086cb9b507219ee95db113a917678b2', 'SP 800-38A CBC');
  eq(cbcOut.byteLength, 48, 'CBC adds a block of PKCS #7 padding');
  const ctr = await crypto.subtle.importKey('raw', nistKey, 'AES-CTR', false, ['encrypt', 'decrypt']);
  const counter = unhex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
  eq(hex(await crypto.subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, ctr, p1)),
    '874d6191b620e3261bef6864990db6ce' + '9806f66b7970fdff8617187bb9fffdff', 'SP 800-38A CTR');

  // With an 8-bit counter, the block after ...ff is ...00: its key stream is the
  // first block's of a counter ending in 00.
  const wrapAt = unhex('000102030405060708090a0b0c0d0eff'), wrapped = unhex('000102030405060708090a0b0c0d0e00');
  const two = await crypto.subtle.encrypt({ name: 'AES-CTR', counter: wrapAt, length: 8 }, ctr, new Uint8Array(32));
  const one = await crypto.subtle.encrypt({ name: 'AES-CTR', counter: wrapped, length: 8 }, ctr, new Uint8Array(16));
  eq(hex(two).slice(32), hex(one), 'an 8-bit counter wraps within its bits');

  const pw = await crypto.subtle.importKey('raw', utf8('password'), 'PBKDF2', false, ['deriveBits', 'deriveKey']);
  eq(hex(await crypto.subtle.deriveBits({ name: 'PBKDF2', salt: utf8('salt'), iterations: 1, hash: 'SHA-1' }, pw, 160)),
    '0c60c80f961f0e71f3a9b524af6012062fe037a6', 'RFC 6070 c=1');
  eq(hex(await crypto.subtle.deriveBits({ name: 'PBKDF2', salt: utf8('salt'), iterations: 2, hash: 'SHA-1' }, pw, 160)),
    'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957', 'RFC 6070 c=2');
  const derived = await crypto.subtle.deriveKey({ name: 'PBKDF2', salt: utf8('salt'), iterations: 2, hash: 'SHA-1' }, pw,
    { name: 'HMAC', hash: 'SHA-256', length: 160 }, true, ['sign']);
  eq(hex(await crypto.subtle.exportKey('raw', derived)), 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957', 'deriveKey');
  eq(derived.algorithm.hash.name + '/' + derived.algorithm.length, 'SHA-256/160', 'derived key algorithm');
}
`, nil)
	r.mustPass(t)
}

// TestWebCryptoRoundTrips generates keys of every algorithm and curve and
// uses them: sign then verify, encrypt then decrypt, export then import in
// each format the key has, the imported key working with the original's
// other half; and the keys' CryptoKey fields.
func TestWebCryptoRoundTrips(t *testing.T) {
	r := runIteration(context.Background(), t, cryptoHelpers+`
const msg = utf8('llmchaos round trip');
async function signs(alg, priv, pub, what) {
  const sig = await crypto.subtle.sign(alg, priv, msg);
  eq(await crypto.subtle.verify(alg, pub, sig, msg), true, what + ' verifies');
  const bad = new Uint8Array(sig.slice(0)); bad[0] ^= 1;
  eq(await crypto.subtle.verify(alg, pub, bad, msg), false, what + ' altered signature');
  return sig;
}
export default async function () {
  for (const curve of ['P-256', 'P-384', 'P-521']) {
    const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: curve }, true, ['sign', 'verify']);
    eq(pair.privateKey.type + ' ' + pair.publicKey.type, 'private public', curve + ' types');
    eq(pair.privateKey.usages.join() + ' ' + pair.publicKey.usages.join(), 'sign verify', curve + ' usages split');
    eq(pair.publicKey.algorithm.namedCurve, curve, 'namedCurve');
    eq(String(pair.publicKey), '[object CryptoKey]', 'toStringTag');
    eq(pair.publicKey instanceof crypto.CryptoKey, true, 'instanceof CryptoKey');
    const alg = { name: 'ECDSA', hash: 'SHA-256' };
    const sig = await signs(alg, pair.privateKey, pair.publicKey, 'ECDSA ' + curve);
    eq(sig.byteLength, { 'P-256': 64, 'P-384': 96, 'P-521': 132 }[curve], curve + ' r||s length');
    const spki = await crypto.subtle.importKey('spki', await crypto.subtle.exportKey('spki', pair.publicKey), { name: 'ECDSA', namedCurve: curve }, true, ['verify']);
    const raw = await crypto.subtle.importKey('raw', await crypto.subtle.exportKey('raw', pair.publicKey), { name: 'ECDSA', namedCurve: curve }, true, ['verify']);
    const jwkPub = await crypto.subtle.exportKey('jwk', pair.publicKey);
    eq(jwkPub.kty + ' ' + jwkPub.crv + ' ' + (jwkPub.d === undefined), 'EC ' + curve + ' true', 'public JWK');
    const jwk = await crypto.subtle.importKey('jwk', jwkPub, { name: 'ECDSA', namedCurve: curve }, true, ['verify']);
    for (const k of [spki, raw, jwk]) eq(await crypto.subtle.verify(alg, k, sig, msg), true, curve + ' imported public key verifies');
    const pkcs8 = await crypto.subtle.importKey('pkcs8', await crypto.subtle.exportKey('pkcs8', pair.privateKey), { name: 'ECDSA', namedCurve: curve }, false, ['sign']);
    const jwkPriv = await crypto.subtle.importKey('jwk', await crypto.subtle.exportKey('jwk', pair.privateKey), { name: 'ECDSA', namedCurve: curve }, false, ['sign']);
    for (const k of [pkcs8, jwkPriv]) await signs(alg, k, pair.publicKey, curve + ' imported private key');

    const a = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: curve }, true, ['deriveBits', 'deriveKey']);
    const b = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: curve }, false, ['deriveBits']);
    eq(b.publicKey.usages.length + '/' + b.publicKey.extractable, '0/true', 'ECDH public key: no usages, extractable');
    const ab = await crypto.subtle.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, null);
    const ba = await crypto.subtle.deriveBits({ name: 'ECDH', public: a.publicKey }, b.privateKey, null);
    eq(hex(ab), hex(ba), curve + ' ECDH agrees');
    const half = await crypto.subtle.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, 128);
    eq(hex(half), hex(ab).slice(0, 32), 'ECDH length truncates');
    const aes = await crypto.subtle.deriveKey({ name: 'ECDH', public: b.publicKey }, a.privateKey, { name: 'AES-GCM', length: 256 }, true, ['encrypt']);
    eq(hex(await crypto.subtle.exportKey('raw', aes)), hex(ab).slice(0, 64), 'ECDH deriveKey');
  }

  for (const [name, extra] of [['RSASSA-PKCS1-v1_5', {}], ['RSA-PSS', { saltLength: 32 }]]) {
    const pair = await crypto.subtle.generateKey({ name, modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
    eq(pair.publicKey.algorithm.modulusLength + ' ' + hex(pair.publicKey.algorithm.publicExponent) + ' ' + pair.publicKey.algorithm.hash.name,
      '1024 010001 SHA-256', name + ' algorithm');
    const alg = Object.assign({ name }, extra);
    const sig = await signs(alg, pair.privateKey, pair.publicKey, name);
    const spki = await crypto.subtle.importKey('spki', await crypto.subtle.exportKey('spki', pair.publicKey), { name, hash: 'SHA-256' }, true, ['verify']);
    const jwkPub = await crypto.subtle.exportKey('jwk', pair.publicKey);
    eq(jwkPub.alg, name === 'RSA-PSS' ? 'PS256' : 'RS256', name + ' JWK alg');
    const jwk = await crypto.subtle.importKey('jwk', jwkPub, { name, hash: 'SHA-256' }, true, ['verify']);
    for (const k of [spki, jwk]) eq(await crypto.subtle.verify(alg, k, sig, msg), true, name + ' imported public key verifies');
    const pkcs8 = await crypto.subtle.importKey('pkcs8', await crypto.subtle.exportKey('pkcs8', pair.privateKey), { name, hash: 'SHA-256' }, true, ['sign']);
    const jwkPriv = await crypto.subtle.importKey('jwk', await crypto.subtle.exportKey('jwk', pair.privateKey), { name, hash: 'SHA-256' }, true, ['sign']);
    for (const k of [pkcs8, jwkPriv]) await signs(alg, k, pair.publicKey, name + ' imported private key');
  }

  const oaep = await crypto.subtle.generateKey({ name: 'RSA-OAEP', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['encrypt', 'decrypt']);
  const label = utf8('label');
  const sealed = await crypto.subtle.encrypt({ name: 'RSA-OAEP', label }, oaep.publicKey, msg);
  eq(new TextDecoder().decode(await crypto.subtle.decrypt({ name: 'RSA-OAEP', label }, oaep.privateKey, sealed)), 'llmchaos round trip', 'RSA-OAEP');

  for (const [name, params] of [['AES-CBC', { iv: crypto.getRandomValues(new Uint8Array(16)) }],
    ['AES-CTR', { counter: crypto.getRandomValues(new Uint8Array(16)), length: 64 }],
    ['AES-GCM', { iv: crypto.getRandomValues(new Uint8Array(12)), additionalData: utf8('aad'), tagLength: 96 }]]) {
    for (const length of [128, 192, 256]) {
      const key = await crypto.subtle.generateKey({ name, length }, true, ['encrypt', 'decrypt']);
      eq(key.type + ' ' + key.algorithm.name + ' ' + key.algorithm.length + ' ' + key.extractable, 'secret ' + name + ' ' + length + ' true', 'AES key');
      const alg = Object.assign({ name }, params);
      const ct = await crypto.subtle.encrypt(alg, key, msg);
      const jwk = await crypto.subtle.exportKey('jwk', key);
      eq(jwk.alg, 'A' + length + name.slice(4), 'AES JWK alg');
      const again = await crypto.subtle.importKey('jwk', jwk, name, false, ['decrypt']);
      eq(new TextDecoder().decode(await crypto.subtle.decrypt(alg, again, ct)), 'llmchaos round trip', name + length);
    }
  }
  const hmac = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-512' }, true, ['sign', 'verify']);
  eq(hmac.algorithm.length, 1024, 'HMAC default length is the hash block');
  const hjwk = await crypto.subtle.exportKey('jwk', hmac);
  eq(hjwk.alg + ' ' + hjwk.key_ops.join() + ' ' + hjwk.ext, 'HS512 sign,verify true', 'HMAC JWK');
  await signs('HMAC', hmac, await crypto.subtle.importKey('jwk', hjwk, { name: 'HMAC', hash: 'SHA-512' }, false, ['verify']), 'HMAC JWK');
  const digests = await Promise.all(Array.from({ length: 20 }, (_, i) => crypto.subtle.digest('SHA-256', utf8('n' + i))));
  eq(new Set(digests.map(hex)).size, 20, 'twenty digests at once');
}
`, nil)
	r.mustPass(t)
}

// TestWebCryptoErrorsAreNamedAsInK6: each misuse rejects (or, for the
// synchronous getRandomValues, throws) an Error with WebCrypto's name.
func TestWebCryptoErrorsAreNamedAsInK6(t *testing.T) {
	r := runIteration(context.Background(), t, cryptoHelpers+`
async function rejects(what, name, part, fn) {
  try { await fn(); } catch (e) {
    eq(e instanceof Error, true, what + ': an Error');
    eq(e.name, name, what + ' (' + e.message + ')');
    if (!e.message.includes(part)) throw new Error(what + ': message ' + JSON.stringify(e.message) + ' lacks ' + JSON.stringify(part));
    return;
  }
  throw new Error(what + ': no error');
}
export default async function () {
  const s = crypto.subtle;
  const hmac = await s.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const gcm = await s.generateKey({ name: 'AES-GCM', length: 128 }, true, ['encrypt', 'decrypt']);
  const iv = new Uint8Array(12);
  await rejects('sign without the sign usage', 'InvalidAccessError', 'lack "sign"', () => s.sign('HMAC', hmac, utf8('x')));
  await rejects('a key of another algorithm', 'InvalidAccessError', 'AES-GCM key, not an AES-CBC', () => s.encrypt({ name: 'AES-CBC', iv: new Uint8Array(16) }, gcm, utf8('x')));
  await rejects('export of a non-extractable key', 'InvalidAccessError', 'not extractable', () => s.exportKey('raw', hmac));
  await rejects('not a key', 'InvalidAccessError', 'must be a CryptoKey', () => s.encrypt({ name: 'AES-GCM', iv }, { type: 'secret' }, utf8('x')));
  await rejects('unknown digest', 'NotSupportedError', 'algorithm "MD5" is not supported', () => s.digest('MD5', utf8('x')));
  await rejects('algorithm without the operation', 'NotSupportedError', '"ECDSA" is not supported', () => s.encrypt('ECDSA', gcm, utf8('x')));
  await rejects('unknown curve', 'NotSupportedError', 'curve "P-192"', () => s.generateKey({ name: 'ECDH', namedCurve: 'P-192' }, true, ['deriveBits']));
  await rejects('wrapKey', 'NotSupportedError', 'not implemented', () => s.wrapKey('raw', gcm, gcm, 'AES-KW'));
  await rejects('short AES key', 'DataError', '16, 24 or 32 bytes, got 15', () => s.importKey('raw', new Uint8Array(15), 'AES-CBC', false, ['encrypt']));
  const ec = await s.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const ecSPKI = await s.exportKey('spki', ec.publicKey);
  const ecPKCS8 = await s.exportKey('pkcs8', ec.privateKey);
  await rejects('SPKI of another kind', 'DataError', 'the SPKI holds a EC key, not an RSA one',
    () => s.importKey('spki', ecSPKI, { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['verify']));
  await rejects('PKCS #8 of another kind', 'DataError', 'the PKCS #8 holds a EC key, not an RSA one',
    () => s.importKey('pkcs8', ecPKCS8, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']));
  await rejects('not SPKI at all', 'DataError', 'not an SPKI public key',
    () => s.importKey('spki', new Uint8Array(8), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']));
  await rejects('JWK of another type', 'DataError', 'kty is "oct", want "EC"', () => s.importKey('jwk', { kty: 'oct', k: 'AAAA' }, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']));
  await rejects('usage the algorithm lacks', 'SyntaxError', 'cannot have usage "sign"', () => s.generateKey({ name: 'AES-GCM', length: 128 }, true, ['sign']));
  await rejects('no usages', 'SyntaxError', 'needs at least one usage', () => s.generateKey({ name: 'AES-GCM', length: 128 }, true, []));
  await rejects('bad AES length', 'OperationError', '128, 192 or 256', () => s.generateKey({ name: 'AES-GCM', length: 100 }, true, ['encrypt']));
  const ct = new Uint8Array(await s.encrypt({ name: 'AES-GCM', iv }, gcm, utf8('secret')));
  ct[0] ^= 1;
  await rejects('altered ciphertext', 'OperationError', 'message authentication failed', () => s.decrypt({ name: 'AES-GCM', iv }, gcm, ct));
  await rejects('missing iv', 'TypeError', 'needs iv', () => s.encrypt('AES-GCM', gcm, utf8('x')));
  await rejects('data of the wrong type', 'TypeError', 'want an ArrayBuffer', () => s.digest('SHA-256', 'text'));
  let thrown;
  try { crypto.getRandomValues(new Float32Array(4)); } catch (e) { thrown = e; }
  eq(thrown && thrown.name, 'TypeMismatchError', 'getRandomValues of floats');
  thrown = undefined;
  try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { thrown = e; }
  eq(thrown && thrown.name, 'QuotaExceededError', 'getRandomValues over 65536 bytes');
  const big = crypto.getRandomValues(new Uint32Array(16384));
  eq(big.some((v) => v > 0xffffff), true, 'getRandomValues fills the 4 bytes of each element');
  const part = new Uint8Array(8);
  crypto.getRandomValues(part.subarray(2, 4));
  eq(part[0] + part[1] + part[4] + part[5] + part[6] + part[7], 0, 'getRandomValues fills the view only');
  eq(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()), true, 'randomUUID is a v4 UUID');
}
`, nil)
	r.mustPass(t)
}

// TestWebCryptoRejectionFailsTheIteration: a subtle promise rejected with
// nobody to handle it, or awaited by the default function, fails the
// iteration with its name and message, as other async errors do.
func TestWebCryptoRejectionFailsTheIteration(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unhandled", `export default function () { crypto.subtle.digest('SHA-3', new Uint8Array(1)); }`,
			`Uncaught (in promise) NotSupportedError: digest: algorithm "SHA-3" is not supported`},
		{"awaited", `export default async function () {
  const key = await crypto.subtle.generateKey({ name: 'AES-CBC', length: 128 }, false, ['encrypt']);
  await crypto.subtle.decrypt({ name: 'AES-CBC', iv: new Uint8Array(16) }, key, new Uint8Array(16));
}`, `InvalidAccessError: decrypt: the key's usages [encrypt] lack "decrypt"`},
		{"in the work", `export default async function () {
  const key = await crypto.subtle.importKey('raw', new Uint8Array(16), 'AES-CBC', false, ['decrypt']);
  await crypto.subtle.decrypt({ name: 'AES-CBC', iv: new Uint8Array(16) }, key, new Uint8Array(17));
}`, `OperationError: decrypt: AES-CBC: the data's 17 bytes are not whole 16-byte blocks`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runIteration(context.Background(), t, tt.src, nil)
			if r.it.Err == nil || !strings.Contains(r.it.Err.Error(), tt.want) {
				t.Fatalf("iteration error = %v, want it to contain %q", r.it.Err, tt.want)
			}
		})
	}
}

// TestExperimentalWebCryptoImportFailsAsInK6: k6 removed the module when
// crypto became a global, and its import fails with k6's message, at the
// import statement.
func TestExperimentalWebCryptoImportFailsAsInK6(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": "import { crypto } from 'k6/experimental/webcrypto';\nexport default function () {}\n"})
	_, _, err := loadVU(t, dir)
	want := "script.js:1:1: import: k6/experimental/webcrypto has been graduated and it's now globally available"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want it to contain %q", err, want)
	}
}

// TestWebCryptoInteroperatesWithGo: keys and results cross between the
// script and Go's crypto packages both ways, over a real HTTP server: the
// script verifies a Go ECDSA signature from Go's SPKI and encrypts to Go's
// RSA-OAEP key; Go verifies the script's ECDSA and RSASSA signatures with
// the SPKI it exported, decrypts its AES-GCM ciphertext with the JWK it
// exported, and parses its PKCS #8 private key as the pair of its SPKI.
func TestWebCryptoInteroperatesWithGo(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecSPKI, _ := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	rsaSPKI, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	goMsg := []byte("signed by Go")
	d := sha512.Sum384(goMsg)
	rr, ss, err := ecdsa.Sign(rand.Reader, ecKey, d[:])
	if err != nil {
		t.Fatal(err)
	}
	goSig := make([]byte, 96)
	rr.FillBytes(goSig[:48])
	ss.FillBytes(goSig[48:])

	var mu sync.Mutex
	var got map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := json.Unmarshal(b, &got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	b64 := base64.StdEncoding.EncodeToString
	run := runIteration(context.Background(), t, cryptoHelpers+`
import http from 'k6/http';
import { b64encode, b64decode } from 'k6/encoding';
const msg = utf8('signed by the script');
export default async function () {
  const s = crypto.subtle;
  const goPub = await s.importKey('spki', b64decode(__ENV.EC_SPKI), { name: 'ECDSA', namedCurve: 'P-384' }, false, ['verify']);
  eq(await s.verify({ name: 'ECDSA', hash: 'SHA-384' }, goPub, b64decode(__ENV.EC_SIG), utf8('signed by Go')), true, "Go's signature");
  const goRSA = await s.importKey('spki', b64decode(__ENV.RSA_SPKI), { name: 'RSA-OAEP', hash: 'SHA-256' }, false, ['encrypt']);
  const out = { oaep: b64encode(await s.encrypt({ name: 'RSA-OAEP' }, goRSA, utf8('for Go only'))) };
  const ec = await s.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  out.ecSPKI = b64encode(await s.exportKey('spki', ec.publicKey));
  out.ecPKCS8 = b64encode(await s.exportKey('pkcs8', ec.privateKey));
  out.ecSig = b64encode(await s.sign({ name: 'ECDSA', hash: 'SHA-256' }, ec.privateKey, msg));
  const rsa = await s.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign']);
  out.rsaSPKI = b64encode(await s.exportKey('spki', rsa.publicKey));
  out.rsaSig = b64encode(await s.sign('RSASSA-PKCS1-v1_5', rsa.privateKey, msg));
  const aes = await s.generateKey({ name: 'AES-GCM', length: 256 }, true, ['encrypt']);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  out.aesK = (await s.exportKey('jwk', aes)).k;
  out.aesIV = b64encode(iv);
  out.aesCT = b64encode(await s.encrypt({ name: 'AES-GCM', iv }, aes, utf8('sealed by the script')));
  eq(http.post(__ENV.URL, JSON.stringify(out)).status, 200, 'post');
}
`, map[string]string{"EC_SPKI": b64(ecSPKI), "EC_SIG": b64(goSig), "RSA_SPKI": b64(rsaSPKI), "URL": srv.URL})
	run.mustPass(t)
	mu.Lock()
	defer mu.Unlock()
	dec := func(k string) []byte {
		b, err := base64.StdEncoding.DecodeString(got[k])
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return b
	}
	if pt, err := rsa.DecryptOAEP(sha256.New(), nil, rsaKey, dec("oaep"), nil); err != nil || string(pt) != "for Go only" {
		t.Errorf("RSA-OAEP from the script: %q, %v", pt, err)
	}
	msg := sha256.Sum256([]byte("signed by the script"))
	pub, err := x509.ParsePKIXPublicKey(dec("ecSPKI"))
	if err != nil {
		t.Fatal(err)
	}
	sig := dec("ecSig")
	if !ecdsa.Verify(pub.(*ecdsa.PublicKey), msg[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Error("Go does not verify the script's ECDSA signature")
	}
	priv, err := x509.ParsePKCS8PrivateKey(dec("ecPKCS8"))
	if err != nil {
		t.Fatal(err)
	}
	if !priv.(*ecdsa.PrivateKey).PublicKey.Equal(pub) {
		t.Error("the script's PKCS #8 key is not the private key of its SPKI")
	}
	rpub, err := x509.ParsePKIXPublicKey(dec("rsaSPKI"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(rpub.(*rsa.PublicKey), crypto.SHA256, msg[:], dec("rsaSig")); err != nil {
		t.Errorf("Go does not verify the script's RSASSA signature: %v", err)
	}
	k, err := base64.RawURLEncoding.DecodeString(got["aesK"])
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(k)
	gcm, _ := cipher.NewGCM(block)
	if pt, err := gcm.Open(nil, dec("aesIV"), dec("aesCT"), nil); err != nil || string(pt) != "sealed by the script" {
		t.Errorf("AES-GCM from the script: %q, %v", pt, err)
	}
}
