// expect: exit 0
// k6/crypto and k6/encoding as k6's docs use them: an HMAC-signed JSON
// POST with basic auth, checked by the server.
import http from 'k6/http';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import { check } from 'k6';

export const options = {
  iterations: 3,
  thresholds: { checks: ['rate==1'] },
};

export default function () {
  const body = JSON.stringify({ iteration: __ITER, vu: __VU });
  const signature = crypto.hmac('sha256', 'secret-key', body, 'hex');
  const credentials = encoding.b64encode('user:passwd');
  const res = http.post(`${__ENV.BASE_URL}/api/signed`, body, {
    headers: { 'Content-Type': 'application/json', 'X-Signature': signature, Authorization: `Basic ${credentials}` },
  });
  check(res, {
    'signature accepted': (r) => r.status === 200,
    'echoes the iteration': (r) => r.json('iteration') === __ITER,
    'digest matches': (r) => r.json('sha256') === crypto.sha256(body, 'hex'),
  });
}
