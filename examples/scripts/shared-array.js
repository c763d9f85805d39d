// A data set of prompts loaded once into a SharedArray: the function runs
// in the first VU's init only, and every VU reads the same read-only data
// (each element parsed when read: 1,000 VUs do not hold 1,000 copies).
// Each prompt is sent once, tagged with its id as the request class.
//
//   llmchaos run examples/scripts/shared-array.js -e BASE_URL=http://127.0.0.1:8000/v1
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { Counter } from 'k6/metrics';
import llm from 'k6/x/llm';

const prompts = new SharedArray('prompts', function () {
  return JSON.parse(open('./data/prompts.json'));
});

const VUS = 2;
const PER_VU = Math.ceil(prompts.length / VUS);

const promptChars = new Counter('prompt_chars');

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
});

export const options = {
  scenarios: {
    prompts: { executor: 'per-vu-iterations', vus: VUS, iterations: PER_VU },
  },
  thresholds: {
    checks: ['rate==1'],
  },
};

export default function () {
  // VU 1 takes the first PER_VU prompts, VU 2 the next ones.
  const i = (__VU - 1) * PER_VU + __ITER;
  if (i >= prompts.length) {
    return;
  }
  const p = prompts[i];
  const res = client.chat({
    messages: [{ role: 'user', content: p.prompt }],
    max_tokens: 8,
    tags: { class: p.id },
  });
  promptChars.add(p.prompt.length);
  check(res, {
    'answered': (r) => r.ok && r.text.length > 0,
    'data is read-only': () => Object.isFrozen(p),
  });
}
