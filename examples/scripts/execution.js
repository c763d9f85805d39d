// k6/execution: each iteration takes the prompt of its own index in the
// scenario (exec.scenario.iterationInTest is unique across the VUs), tags
// its samples through exec.vu.tags, and exec.test.abort() ends the run
// early when asked to (ABORT_AFTER completed iterations).
//
//   llmchaos run examples/scripts/execution.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import llm from 'k6/x/llm';

const seen = new Counter('iteration_seen');
const prompts = ['Say hi.', 'Name a colour.', 'Count to three.', 'Name a fruit.', 'Say bye.'];
const n = Number(__ENV.ITERATIONS || 40);

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
  timeout: '30s',
});

export const options = {
  scenarios: {
    prompts: { executor: 'shared-iterations', vus: 4, iterations: n, maxDuration: '1m' },
  },
  thresholds: { checks: ['rate>0.99'] },
};

export default function () {
  const i = exec.scenario.iterationInTest;
  const abortAfter = Number(__ENV.ABORT_AFTER || 0);
  if (abortAfter > 0 && exec.instance.iterationsCompleted >= abortAfter) {
    exec.test.abort('enough iterations: ' + abortAfter);
  }
  // Samples from here on carry the VU's tag: the chat request's class.
  exec.vu.tags.class = 'prompt-' + (i % prompts.length);
  const res = client.chat({ messages: [{ role: 'user', content: prompts[i % prompts.length] }], max_tokens: 8 });
  check(res, {
    'status 200': (r) => r.status === 200,
    'index in range': () => i >= 0 && i < n,
    'vu in range': () => exec.vu.idInTest >= 1 && exec.vu.idInTest <= 4,
  });
  // One sample per iteration index: the test checks each index once.
  seen.add(1, { class: 'iter-' + i });
}
