// expect: exit 99
// An abortOnFail threshold on errors (k6's docs: "Abort a test when a
// threshold is crossed"): every request fails, the run stops early, 99.
import http from 'k6/http';
import { sleep } from 'k6';

export const options = {
  vus: 2,
  duration: '1m',
  thresholds: {
    http_req_failed: [{ threshold: 'rate<0.1', abortOnFail: true }],
  },
};

export default function () {
  http.get(`${__ENV.BASE_URL}/status/500`);
  sleep(0.05);
}
