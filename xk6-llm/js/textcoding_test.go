package js

import (
	"context"
	"testing"
)

// TestTextEncoderAndDecoderFollowTheEncodingStandard checks the globals
// against the WHATWG Encoding standard: UTF-8 bytes of non-ASCII text,
// encodeInto stopping before a character that does not fit (counting
// UTF-16 code units read), one U+FFFD per maximal invalid subsequence,
// fatal decoders throwing a TypeError, the BOM dropped unless ignoreBOM,
// a character split across streamed chunks, UTF-16LE and UTF-16BE, and an
// unknown label a RangeError.
func TestTextEncoderAndDecoderFollowTheEncodingStandard(t *testing.T) {
	r := runIteration(context.Background(), t, `
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(want)); }
const hexOf = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join(' ');
export default function () {
  const enc = new TextEncoder();
  eq(enc.encoding, 'utf-8', 'encoding');
  const bytes = enc.encode('h\u00e9 \u20ac\ud834\udd1e');
  eq(bytes instanceof Uint8Array, true, 'encode gives a Uint8Array');
  eq(hexOf(bytes), '68 c3 a9 20 e2 82 ac f0 9d 84 9e', 'encode');
  eq(enc.encode().length, 0, 'encode()');
  eq(hexOf(enc.encode('a\ud800b')), '61 ef bf bd 62', 'a lone surrogate encodes as U+FFFD');
  const dst = new Uint8Array(6);
  const res = enc.encodeInto('a\u00e9\u20ac\ud834\udd1e', dst);
  eq(res.read + '/' + res.written, '3/6', 'encodeInto stops before what does not fit');
  eq(hexOf(dst), '61 c3 a9 e2 82 ac', 'encodeInto bytes');
  eq(enc.encodeInto('\ud834\udd1e', new Uint8Array(4)).read, 2, 'a surrogate pair is read as two code units');

  const dec = new TextDecoder();
  eq(dec.encoding + ' ' + dec.fatal + ' ' + dec.ignoreBOM, 'utf-8 false false', 'decoder fields');
  eq(dec.decode(bytes), 'h\u00e9 \u20ac\ud834\udd1e', 'round trip');
  eq(dec.decode(bytes.buffer), 'h\u00e9 \u20ac\ud834\udd1e', 'ArrayBuffer input');
  eq(dec.decode(), '', 'decode()');
  eq(dec.decode(new Uint8Array([0xf0, 0x9f, 0x98, 0x41])), '\ufffdA', 'truncated sequence: one U+FFFD');
  eq(dec.decode(new Uint8Array([0xc0, 0x80, 0x41])), '\ufffd\ufffdA', 'overlong: one U+FFFD per byte');
  eq(dec.decode(new Uint8Array([0xed, 0xa0, 0x80])), '\ufffd\ufffd\ufffd', 'encoded surrogate');
  eq(dec.decode(new Uint8Array([0xe2, 0x82])), '\ufffd', 'cut at the end');
  eq(dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), 'A', 'BOM dropped');
  eq(new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), '\ufeffA', 'ignoreBOM keeps it');

  const fatal = new TextDecoder('UTF8', { fatal: true });
  eq(fatal.fatal, true, 'fatal field');
  let thrown;
  try { fatal.decode(new Uint8Array([0x41, 0xff])); } catch (e) { thrown = e; }
  eq(thrown instanceof TypeError, true, 'fatal decoder throws a TypeError');

  const s = new TextDecoder();
  const euro = enc.encode('\u20ac');
  eq(s.decode(euro.subarray(0, 1), { stream: true }) + '|' + s.decode(euro.subarray(1, 2), { stream: true }) + '|' +
    s.decode(euro.subarray(2)), '||\u20ac', 'a character split across streamed chunks');
  eq(s.decode(euro.subarray(0, 2), { stream: true }) + '|' + s.decode(), '|\ufffd', 'a stream cut short ends in U+FFFD');

  eq(new TextDecoder('utf-16le').decode(new Uint8Array([0x41, 0, 0x3d, 0xd8, 0x00, 0xde])), 'A\ud83d\ude00', 'UTF-16LE');
  eq(new TextDecoder('utf-16be').decode(new Uint8Array([0, 0x41, 0xd8, 0x3d])), 'A\ufffd', 'UTF-16BE, lone lead surrogate');
  thrown = undefined;
  try { new TextDecoder('latin9'); } catch (e) { thrown = e; }
  eq(thrown instanceof RangeError, true, 'unknown label');
}
`, nil)
	r.mustPass(t)
}
