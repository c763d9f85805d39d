// Raw streaming chat over k6/x/sse, written the way k6 scripts for LLM
// servers are (with the xk6-sse extension): POST /chat/completions with
// stream: true, parse each event's JSON, count the content tokens, and
// time the first token in JavaScript with Date.now(). The same script runs
// under k6 built with xk6-sse. (k6/x/llm takes these timings in Go instead,
// where they do not depend on the script's speed.)
//
//   llmchaos run examples/scripts/sse-raw.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import sse from 'k6/x/sse';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const timeToFirstToken = new Trend('js_time_to_first_token', true);
const streamedTokens = new Counter('streamed_tokens');

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8000/v1';
const MAX_TOKENS = Number(__ENV.MAX_TOKENS || 16);

export const options = {
  vus: Number(__ENV.VUS || 2),
  iterations: Number(__ENV.ITERATIONS || 10),
  thresholds: {
    js_time_to_first_token: ['p(95)<2000'],
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
  },
};

export default function () {
  const body = JSON.stringify({
    model: __ENV.MODEL || 'llmchaos-sim',
    messages: [{ role: 'user', content: 'Tell me about the number ' + __ITER + '.' }],
    max_tokens: MAX_TOKENS,
    ignore_eos: true, // vLLM's: exactly max_tokens tokens
    stream: true,
    stream_options: { include_usage: true },
  });
  const params = {
    method: 'POST',
    body: body,
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + (__ENV.API_KEY || 'none') },
    tags: { name: 'chat-stream' },
  };

  const start = Date.now();
  let first = 0;
  let tokens = 0;
  let text = '';
  let usage = null;
  let done = false;
  const res = sse.open(BASE_URL + '/chat/completions', params, function (client) {
    client.on('event', function (event) {
      if (event.data === '[DONE]') {
        done = true;
        client.close();
        return;
      }
      const chunk = JSON.parse(event.data);
      if (chunk.usage) {
        usage = chunk.usage;
      }
      const delta = chunk.choices && chunk.choices.length > 0 ? chunk.choices[0].delta : null;
      if (delta && delta.content) {
        if (first === 0) {
          first = Date.now();
          timeToFirstToken.add(first - start);
        }
        tokens++;
        text += delta.content;
      }
    });
    client.on('error', function (e) {
      console.error('stream error: ' + e.error());
    });
  });

  streamedTokens.add(tokens);
  check(res, {
    'status 200': (r) => r.status === 200,
    'stream ended with [DONE]': () => done,
    'tokens counted match usage': () => usage !== null && usage.completion_tokens === tokens,
    'has text': () => text.length > 0,
  });
}
