// A check that always fails, with an abortOnFail threshold on checks: the
// run stops at the first live check instead of running its 60 s.
import { check, sleep } from 'k6';

export const options = {
  vus: 2,
  duration: '60s',
  thresholds: { checks: [{ threshold: 'rate>0.9', abortOnFail: true }] },
};

export default function () {
  check(1, { 'never': () => false });
  sleep(0.05);
}
