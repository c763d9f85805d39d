// expect: exit 0
// http.asyncRequest with Promise.all and a timer (k6's docs: "asyncRequest").
import http from 'k6/http';
import { check } from 'k6';
import { setTimeout } from 'k6/timers';

export const options = {
  iterations: 2,
  thresholds: { checks: ['rate==1'], http_reqs: ['count==6'] },
};

export default async function () {
  const [a, b] = await Promise.all([
    http.asyncRequest('GET', `${__ENV.BASE_URL}/`),
    http.asyncRequest('POST', `${__ENV.BASE_URL}/api/echo`, JSON.stringify({ n: 1 })),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const c = await http.asyncRequest('GET', `${__ENV.BASE_URL}/slow`);
  check(a, { 'page ok': (r) => r.status === 200 });
  check(b, { 'echo ok': (r) => r.json('n') === 1 });
  check(c, { 'slow ok': (r) => r.status === 200 });
}
