// A custom Trend with thresholds on it: decode_time is a duration (isTime)
// recorded by the script from each answer, per request class. The
// thresholds select the whole run and one class; a bound the server cannot
// meet (-e LONG_MAX_MS=1) fails the run with exit code 99.
//
//   llmchaos run examples/scripts/custom-trend.js -e BASE_URL=http://127.0.0.1:8000/v1
import { check } from 'k6';
import { Trend } from 'k6/metrics';
import llm from 'k6/x/llm';

const decodeTime = new Trend('decode_time', true);

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
});

const classes = [
  { name: 'short', maxTokens: 4 },
  { name: 'long', maxTokens: 24 },
];

export const options = {
  scenarios: { decode: { executor: 'shared-iterations', vus: 2, iterations: Number(__ENV.ITERATIONS || 8) } },
  thresholds: {
    decode_time: ['count>0', 'p(95)<' + (__ENV.MAX_MS || '5000')],
    'decode_time{class:long}': ['max<' + (__ENV.LONG_MAX_MS || '5000')],
  },
};

export default function () {
  const c = classes[__ITER % classes.length];
  const res = client.chat({
    messages: [{ role: 'user', content: 'Tell me about ' + c.name + ' answers.' }],
    max_tokens: c.maxTokens,
    ignore_eos: true,
    tags: { class: c.name },
  });
  check(res, { 'ok': (r) => r.ok });
  if (res.ok) {
    decodeTime.add(res.e2e - res.ttft, { class: c.name });
  }
}
