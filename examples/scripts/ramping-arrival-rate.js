// Chat at a ramping arrival rate: iteration starts climb linearly from
// startRate to the stage's target, then hold, as k6's ramping-arrival-rate
// executor does. One VU is pre-allocated; when an iteration finds none
// free it is dropped (dropped_iterations) and one more VU is initialized,
// up to maxVUs.
//
//   llmchaos run examples/scripts/ramping-arrival-rate.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import { check } from 'k6';
import llm from 'k6/x/llm';

const rate = Number(__ENV.RATE || 30);
const step = __ENV.STAGE || '30s';

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
  timeout: '30s',
});

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-arrival-rate',
      startRate: 0,
      timeUnit: '1s',
      preAllocatedVUs: 1,
      maxVUs: 20,
      stages: [
        { duration: step, target: rate },
        { duration: step, target: rate },
      ],
    },
  },
  thresholds: {
    ttft: ['p(99)<2s'],
    error_rate: ['rate<0.01'],
    'dropped_iterations': ['count<' + (__ENV.MAX_DROPPED || 50)],
  },
};

export default function () {
  const res = client.chat({
    messages: [{ role: 'user', content: 'Write a long story.' }],
    max_tokens: 64,
    ignore_eos: true,
  });
  check(res, { 'status 200': (r) => r.status === 200, 'all tokens': (r) => r.outputTokens === 64 });
}
