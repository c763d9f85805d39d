// expect: exit 108
// exec.test.abort() in setup when the system under test is not ready.
import http from 'k6/http';
import exec from 'k6/execution';

export function setup() {
  const res = http.get(`${__ENV.BASE_URL}/status/503`);
  if (res.status !== 200) {
    exec.test.abort(`the service is not ready: ${res.status}`);
  }
}

export default function () {
  http.get(`${__ENV.BASE_URL}/`);
}
