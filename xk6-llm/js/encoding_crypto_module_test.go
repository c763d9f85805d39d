package js

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestEncodingAndCryptoModulesGiveKnownVectors checks k6/encoding and
// k6/crypto against published vectors (RFC 4648's base64 examples, the
// FIPS 180 "abc" digests, RFC 4231's HMAC-SHA256 test case 2), in every
// encoding and through the streaming hashers, as k6's docs use them.
func TestEncodingAndCryptoModulesGiveKnownVectors(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `import encoding from 'k6/encoding';
import { b64encode, b64decode } from 'k6/encoding';
import crypto from 'k6/crypto';
import { sha256, hmac, createHash, createHMAC, randomBytes } from 'k6/crypto';
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + got + ', want ' + want); }
export default function () {
  eq(b64encode('foobar'), 'Zm9vYmFy', 'std');
  eq(b64encode('fo'), 'Zm8=', 'std padded');
  eq(encoding.b64encode('fo', 'rawstd'), 'Zm8', 'rawstd');
  eq(b64encode('\u00ff\u00fe', 'url'), 'w7_Dvg==', 'url');
  eq(b64encode('\u00ff\u00fe', 'rawurl'), 'w7_Dvg', 'rawurl');
  eq(b64decode('Zm9vYmFy', 'std', 's'), 'foobar', 'decode to string');
  const buf = b64decode('Zm8', 'rawstd');
  eq(buf instanceof ArrayBuffer, true, 'decode to ArrayBuffer');
  eq(new Uint8Array(buf)[1], 0x6f, 'decoded byte');
  eq(b64encode(new Uint8Array([1, 2, 3]).buffer), 'AQID', 'ArrayBuffer input');
  eq(sha256('abc', 'hex'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'sha256');
  eq(crypto.md5('abc', 'hex'), '900150983cd24fb0d6963f7d28e17f72', 'md5');
  eq(crypto.sha1('abc', 'hex'), 'a9993e364706816aba3e25717850c26c9cd0d89d', 'sha1');
  eq(crypto.sha512('abc', 'base64').length, 88, 'sha512 base64');
  eq(hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'hex'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843', 'hmac');
  const h = createHash('sha256'); h.update('a'); h.update('bc');
  eq(h.digest('hex'), sha256('abc', 'hex'), 'createHash');
  const m = createHMAC('sha256', 'Jefe'); m.update('what do ya want '); m.update('for nothing?');
  eq(m.digest('base64rawurl'), hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'base64rawurl'), 'createHMAC');
  eq(randomBytes(16).byteLength, 16, 'randomBytes');
  let threw = '';
  try { crypto.hmac('sha3', 'k', 'd'); } catch (e) { threw = String(e); }
  eq(threw.includes('unknown algorithm "sha3"'), true, 'unknown algorithm: ' + threw);
}
`})
	vu, _, err := loadVU(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
}

// TestAsyncRequestResolvesWithTheResponse: http.asyncRequest returns a
// promise the iteration awaits; two in flight at once both reach the
// server before either answers, and each resolves with its response.
func TestAsyncRequestResolvesWithTheResponse(t *testing.T) {
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if n == 2 {
			close(release)
		}
		<-release
		inFlight.Add(-1)
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	defer srv.Close()
	dir := writeScripts(t, map[string]string{"script.js": `import http from 'k6/http';
export default async function () {
  const [a, b] = await Promise.all([http.asyncRequest('GET', __ENV.URL + '/a'), http.asyncRequest('POST', __ENV.URL + '/b', 'x')]);
  if (a.status !== 200 || a.body !== '/a' || b.body !== '/b') throw new Error('responses ' + a.status + ' ' + a.body + ' ' + b.body);
}
`})
	sh, err := NewShared(SharedOptions{Env: map[string]string{"URL": srv.URL}, Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
	if most.Load() != 2 {
		t.Errorf("at most %d request(s) in flight, want 2 (asyncRequest must not block)", most.Load())
	}
}

// TestRemoteImportsComeFromTheModuleDirectory: an https:// import is read
// from the module directory (HOST/PATH under it), its own relative imports
// beside it; without the file, the error names the file to put there.
func TestRemoteImportsComeFromTheModuleDirectory(t *testing.T) {
	mods := t.TempDir()
	lib := filepath.Join(mods, "jslib.k6.io", "k6-utils", "1.4.0")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"index.js": "import { twice } from './inner.js';\nexport function randomIntBetween(a, b) { return twice(a) - a; }\n",
		"inner.js": "export function twice(x) { return 2 * x; }\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := writeScripts(t, map[string]string{"script.js": `import { randomIntBetween } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';
export const got = randomIntBetween(5, 10);
export default function () {}
`})
	prog, err := LoadWith(filepath.Join(dir, "script.js"), LoadOptions{ModuleDir: mods})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := NewShared(SharedOptions{Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	vu, err := NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	if got := vu.exports.Get("got").ToInteger(); got != 5 {
		t.Errorf("randomIntBetween from the module directory = %d, want 5", got)
	}

	empty := t.TempDir()
	_, err = LoadWith(filepath.Join(dir, "script.js"), LoadOptions{ModuleDir: empty})
	want := filepath.Join(empty, "jslib.k6.io", "k6-utils", "1.4.0", "index.js")
	if err == nil || !strings.Contains(err.Error(), "save it as "+want) || !strings.Contains(err.Error(), "script.js:1:1") {
		t.Errorf("missing remote module: %v; want the import's position and %q", err, want)
	}
	t.Setenv(EnvModuleDir, "")
	_, err = LoadWith(filepath.Join(dir, "script.js"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "DIR/jslib.k6.io/k6-utils/1.4.0/index.js") || !strings.Contains(err.Error(), "--module-dir") {
		t.Errorf("no module directory: %v; want where to save it and how to name the directory", err)
	}
}

// TestCryptoMD4AndRIPEMD160GiveKnownVectors checks k6/crypto's md4 and
// ripemd160 against RFC 1320's and the RIPEMD-160 authors' digests, HMAC
// with RIPEMD-160 against RFC 2286's test cases 1 and 2, each through the
// one-call functions, createHash/createHMAC and hmac, and hexEncode on a
// string and on an ArrayBuffer, as k6 offers them.
func TestCryptoMD4AndRIPEMD160GiveKnownVectors(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `import crypto from 'k6/crypto';
import { md4, ripemd160, createHash, createHMAC, hmac, hexEncode } from 'k6/crypto';
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + got + ', want ' + want); }
export default function () {
  eq(md4('', 'hex'), '31d6cfe0d16ae931b73c59d7e0c089c0', 'md4 empty');
  eq(md4('abc', 'hex'), 'a448017aaf21d8525fc10ae87aa6729d', 'md4 abc');
  eq(crypto.md4('message digest', 'hex'), 'd9130a8164549fe818874806e1c7014b', 'md4 message digest');
  eq(ripemd160('', 'hex'), '9c1185a5c5e9fc54612808977ee8f548b2258d31', 'ripemd160 empty');
  eq(ripemd160('abc', 'hex'), '8eb208f7e05d987a9b044a8e98c6b087f15a0bfc', 'ripemd160 abc');
  eq(crypto.ripemd160('message digest', 'hex'), '5d0689ef49d2fae572b881b123a85ffa21595f36', 'ripemd160 message digest');
  const h4 = createHash('md4'); h4.update('message '); h4.update('digest');
  eq(h4.digest('hex'), 'd9130a8164549fe818874806e1c7014b', 'createHash md4');
  const hr = createHash('ripemd160'); hr.update('a'); hr.update('bc');
  eq(hr.digest('hex'), '8eb208f7e05d987a9b044a8e98c6b087f15a0bfc', 'createHash ripemd160');
  eq(hexEncode(ripemd160('abc', 'binary')), '8eb208f7e05d987a9b044a8e98c6b087f15a0bfc', 'binary, hexEncode');
  eq(hexEncode('abc'), '616263', 'hexEncode string');
  const key = new Uint8Array(20).fill(0x0b).buffer;
  eq(hmac('ripemd160', key, 'Hi There', 'hex'), '24cb4bd67d20fc1a5d2ed7732dcc39377f0a5668', 'hmac ripemd160 case 1');
  eq(hmac('ripemd160', 'Jefe', 'what do ya want for nothing?', 'hex'), 'dda6c0213a485a9e24f4742064a7f033b43c4069', 'hmac ripemd160 case 2');
  const m = createHMAC('ripemd160', 'Jefe'); m.update('what do ya want '); m.update('for nothing?');
  eq(m.digest('hex'), 'dda6c0213a485a9e24f4742064a7f033b43c4069', 'createHMAC ripemd160');
  const m4 = createHMAC('md4', 'Jefe'); m4.update('what do ya want for nothing?');
  eq(m4.digest('base64'), hmac('md4', 'Jefe', 'what do ya want for nothing?', 'base64'), 'createHMAC md4');
  eq(hmac('md4', 'Jefe', 'what do ya want for nothing?', 'hex').length, 32, 'hmac md4 size');
}
`})
	vu, _, err := loadVU(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
}
