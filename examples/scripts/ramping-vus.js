// Ramping VUs with k6's `stages` shortcut: the number of VUs looping over
// chat requests climbs to a peak, holds, and ramps down, as k6's
// ramping-vus executor does.
//
//   llmchaos run examples/scripts/ramping-vus.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import { check, sleep } from 'k6';
import llm from 'k6/x/llm';

const peak = Number(__ENV.PEAK_VUS || 10);
const step = __ENV.STAGE || '30s';

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
  timeout: '30s',
});

export const options = {
  // startVUs is options.vus (1 when unset); each stage moves the VUs
  // linearly to its target over its duration.
  vus: 1,
  stages: [
    { duration: step, target: peak },
    { duration: step, target: peak },
    { duration: step, target: 0 },
  ],
  thresholds: {
    ttft: ['p(99)<2s'],
    error_rate: ['rate<0.01'],
    checks: ['rate>0.99'],
  },
};

export default function () {
  const res = client.chat({ messages: [{ role: 'user', content: 'Count to five.' }], max_tokens: 16 });
  check(res, { 'status 200': (r) => r.status === 200 });
  sleep(0.05);
}
