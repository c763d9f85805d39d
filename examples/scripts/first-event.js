// Time to the first server-sent event, measured the way llama.cpp's k6
// bench script (tools/server/bench in llama.cpp) measures its
// "emit first token" time: the clock starts before sse.open and stops at
// the first event of any kind, the assistant's role chunk included. That
// reads the time to first token only against servers that send the role
// chunk together with the first token, as vLLM, llama.cpp and the
// simulator do (the simulator's --early-role-chunk sends it before prefill,
// and then this reads about 0).
//
//   llmchaos run examples/scripts/first-event.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import sse from 'k6/x/sse';
import { check } from 'k6';
import { Trend } from 'k6/metrics';

const firstEvent = new Trend('first_event_ms', true);

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8000/v1';

export const options = {
  vus: Number(__ENV.VUS || 1),
  iterations: Number(__ENV.ITERATIONS || 20),
  thresholds: { checks: ['rate==1'] },
};

export default function () {
  const body = JSON.stringify({
    model: __ENV.MODEL || 'llmchaos-sim',
    messages: [{ role: 'user', content: 'Say something about iteration ' + __ITER + '.' }],
    max_tokens: Number(__ENV.MAX_TOKENS || 8),
    stream: true,
    stream_options: { include_usage: true },
  });
  const started = new Date();
  let seen = false;
  const res = sse.open(BASE_URL + '/chat/completions', { method: 'POST', body: body }, function (client) {
    client.on('event', function () {
      if (!seen) {
        seen = true;
        firstEvent.add(new Date() - started);
      }
    });
  });
  check(res, { 'status 200': (r) => r.status === 200, 'an event came': () => seen });
}
