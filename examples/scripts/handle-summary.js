// handleSummary(data) replaces the end-of-test summary: this one writes
// the summary data as JSON to a file and a text summary to stdout with the
// k6-summary jslib's textSummary (the import resolves to llmchaos's
// built-in copy: nothing is fetched). --out, --junit and --html are still
// written.
//
//   llmchaos run examples/scripts/handle-summary.js -e BASE_URL=http://127.0.0.1:8000/v1 -e SUMMARY_JSON=summary.json
import { check, group } from 'k6';
import llm from 'k6/x/llm';
import { textSummary } from 'https://jslib.k6.io/k6-summary/0.0.2/index.js';

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
});

export const options = {
  scenarios: { chat: { executor: 'per-vu-iterations', vus: 2, iterations: 3 } },
  thresholds: { ttft: ['p(95)<2000'], checks: ['rate==1'] },
  summaryTrendStats: ['avg', 'p(95)', 'max', 'count'],
};

export default function () {
  group('chat', () => {
    const res = client.chat({ messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 8 });
    check(res, { 'status 200': (r) => r.status === 200 });
  });
}

export function handleSummary(data) {
  return {
    stdout: textSummary(data, { indent: ' ', enableColors: false }),
    [__ENV.SUMMARY_JSON || 'summary.json']: JSON.stringify(data, null, 2),
  };
}
