// expect: exit 0
// The global crypto (WebCrypto) and TextEncoder as k6's docs use them, no
// import: an HMAC-SHA256 signature made by crypto.subtle, checked by the
// server, and a SHA-256 digest compared with the one the server computed.
import http from 'k6/http';
import encoding from 'k6/encoding';
import { check } from 'k6';

export const options = {
  iterations: 3,
  thresholds: { checks: ['rate==1'] },
};

const toHex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

export default async function () {
  const body = JSON.stringify({ iteration: __ITER, vu: __VU, id: crypto.randomUUID() });
  const bytes = new TextEncoder().encode(body);
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('secret-key'),
    { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const signature = toHex(await crypto.subtle.sign('HMAC', key, bytes));
  const digest = toHex(await crypto.subtle.digest('SHA-256', bytes));
  const res = http.post(`${__ENV.BASE_URL}/api/signed`, body, {
    headers: {
      'Content-Type': 'application/json',
      'X-Signature': signature,
      Authorization: `Basic ${encoding.b64encode('user:passwd')}`,
    },
  });
  check(res, {
    'signature accepted': (r) => r.status === 200,
    'echoes the iteration': (r) => r.json('iteration') === __ITER,
    'digest matches': (r) => r.json('sha256') === digest,
  });
}
