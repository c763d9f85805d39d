// A client that gives up after N tokens: client.chat with cancelAfterTokens
// stops reading the stream after N content chunks. Such a request is
// recorded as cancelled (errorClass "cancelled"), not as an error: it is
// left out of error_rate, and its TTFT still counts.
//
//   llmchaos run examples/scripts/cancel-after.js -e BASE_URL=http://127.0.0.1:8000/v1 -e CANCEL_AFTER=5
import { check } from 'k6';
import { Trend } from 'k6/metrics';
import llm from 'k6/x/llm';

const N = Number(__ENV.CANCEL_AFTER || 5);

// The output tokens of the cancelled requests (output_tokens, like e2e,
// counts the requests that ran to their end).
const cancelledTokens = new Trend('cancelled_tokens');

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
});

export const options = {
  scenarios: { cancel: { executor: 'per-vu-iterations', vus: 2, iterations: 4 } },
  thresholds: {
    error_rate: ['rate==0'],
    checks: ['rate==1'],
  },
};

export default function () {
  // Every other request is cancelled after N tokens; the others run to
  // max_tokens.
  const cancel = __ITER % 2 === 0;
  const res = client.chat({
    messages: [{ role: 'user', content: 'Write a long story.' }],
    max_tokens: 4 * N,
    ignore_eos: true,
    cancelAfterTokens: cancel ? N : 0,
  });
  if (cancel) {
    cancelledTokens.add(res.outputTokens);
    check(res, {
      'cancelled after N tokens': (r) => r.outputTokens === N,
      'outcome cancelled': (r) => r.outcome === 'cancelled' && r.errorClass === 'cancelled' && !r.ok,
      'ttft measured': (r) => r.ttft > 0,
    });
  } else {
    check(res, { 'ran to max_tokens': (r) => r.ok && r.outputTokens === 4 * N });
  }
}
