package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestRunScriptWithWebCrypto: `llmchaos run` runs a script that uses the
// global crypto and TextEncoder without an import, as k6 does: its checks
// on a digest vector and a sign-verify round trip pass its thresholds in
// each of its iterations; an
// import of k6/experimental/webcrypto is a script error with k6's message.
func TestRunScriptWithWebCrypto(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := write("crypto.js", `import { check } from 'k6';
import { Counter } from 'k6/metrics';
const passed = new Counter('crypto_passed');
export const options = { iterations: 3, thresholds: { checks: ['rate==1'], crypto_passed: ['count==3'] } };
const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
export default async function () {
  const data = new TextEncoder().encode('abc');
  const digest = hex(await crypto.subtle.digest('SHA-256', data));
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const alg = { name: 'ECDSA', hash: 'SHA-256' };
  const sig = await crypto.subtle.sign(alg, pair.privateKey, data);
  const verified = await crypto.subtle.verify(alg, pair.publicKey, sig, data);
  const ok = check(null, {
    'SHA-256 of abc': () => digest === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    'signature verifies': () => verified,
    'uuid': () => crypto.randomUUID().length === 36,
  });
  if (ok) passed.add(1);
}
`)
	removed := write("experimental.js", "import { crypto } from 'k6/experimental/webcrypto';\nexport default function () {}\n")
	if code, out, errs := run(t, "run", ok, "--quiet", "--no-preflight"); code != exitcode.OK {
		t.Fatalf("crypto.js: exit %d, want %d:\n%s%s", code, exitcode.OK, out, errs)
	}
	code, out, errs := run(t, "run", removed, "--quiet", "--no-preflight")
	want := "k6/experimental/webcrypto has been graduated and it's now globally available"
	if code != exitcode.ScriptException || !strings.Contains(errs, want) {
		t.Fatalf("experimental.js: exit %d, want %d and %q:\n%s%s", code, exitcode.ScriptException, want, out, errs)
	}
}
