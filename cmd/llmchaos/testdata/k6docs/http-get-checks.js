// expect: exit 0
// The first script of k6's docs: GET a page, check its status, thresholds
// on http_req_failed and http_req_duration that hold.
import http from 'k6/http';
import { check, sleep } from 'k6';

export const options = {
  vus: 2,
  iterations: 6,
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<2000'],
  },
};

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/`);
  check(res, {
    'status is 200': (r) => r.status === 200,
    'body has the title': (r) => r.body.includes('<title>'),
  });
  sleep(0.01);
}
