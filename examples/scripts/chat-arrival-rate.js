// Chat at a constant arrival rate against an OpenAI-compatible server,
// with thresholds on the LLM metrics and on a custom Trend.
//
//   llmchaos run examples/scripts/chat-arrival-rate.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import { check } from 'k6';
import { Trend } from 'k6/metrics';
import llm from 'k6/x/llm';

const tokensPerSecond = new Trend('tokens_per_second');

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
  timeout: '30s',
});

export const options = {
  scenarios: {
    chat: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 20),
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: 10,
    },
  },
  thresholds: {
    ttft: ['p(99)<2s'],
    error_rate: ['rate<0.01'],
    checks: ['rate>0.99'],
    tokens_per_second: ['avg>' + (__ENV.MIN_TPS || '1')],
  },
};

export default function () {
  const res = client.chat({
    messages: [{ role: 'user', content: 'Say hello in ' + (__ITER % 5 + 1) + ' words.' }],
    max_tokens: 16,
  });
  check(res, {
    'status 200': (r) => r.status === 200,
    'has text': (r) => r.text.length > 0,
    'ttft measured': (r) => r.ttft > 0,
  });
  if (res.ok && res.e2e > res.ttft) {
    tokensPerSecond.add((res.outputTokens - 1) / ((res.e2e - res.ttft) / 1000));
  }
}
