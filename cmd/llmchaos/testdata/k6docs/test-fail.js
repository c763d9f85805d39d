// expect: exit 110
// exec.test.fail(): the run goes on to its end, then fails.
import http from 'k6/http';
import exec from 'k6/execution';

export const options = { iterations: 3 };

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/`);
  if (exec.scenario.iterationInTest === 1) {
    exec.test.fail(`unexpected page at iteration ${exec.scenario.iterationInTest}`);
  }
  return res;
}
