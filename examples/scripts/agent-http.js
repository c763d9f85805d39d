// A multi-turn agent: an LLM turn through k6/x/llm, tool calls over
// k6/http (a weather lookup and a retrieval search, sent together with
// http.batch), then a second LLM turn that gets the tools' results. The
// LLM turns record ttft, e2e and the other LLM metrics; the tool calls
// record k6's http_req_* metrics (the `name` tag is kept as the class tag,
// hence `{class:weather}` in the thresholds).
//
//   llmchaos run examples/scripts/agent-http.js -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim -e TOOL_URL=http://127.0.0.1:9000
import http from 'k6/http';
import { check } from 'k6';
import llm from 'k6/x/llm';

const client = new llm.Client({
  baseURL: __ENV.BASE_URL || 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL || 'llmchaos-sim',
  timeout: '30s',
});
const TOOL_URL = __ENV.TOOL_URL || 'http://127.0.0.1:9000';
const CITIES = ['Paris', 'Oslo', 'Lima'];

export const options = {
  vus: Number(__ENV.VUS || 2),
  iterations: Number(__ENV.ITERATIONS || 6),
  thresholds: {
    ttft: ['p(99)<2s'],
    error_rate: ['rate<0.01'],
    http_req_failed: ['rate<0.01'],
    'http_req_duration{class:weather}': ['p(95)<1000'],
    checks: ['rate>0.99'],
  },
};

export default function () {
  const city = CITIES[__ITER % CITIES.length];
  const messages = [
    { role: 'system', content: 'You are a travel assistant. Call the weather and search tools before answering.' },
    { role: 'user', content: 'Should I pack an umbrella for ' + city + ' tomorrow?' },
  ];

  const plan = client.chat({ messages: messages, max_tokens: 16 });
  check(plan, { 'turn 1 ok': (r) => r.ok });
  messages.push({ role: 'assistant', content: plan.text });

  const [weather, search] = http.batch([
    ['POST', TOOL_URL + '/weather', JSON.stringify({ city: city }),
      { headers: { 'Content-Type': 'application/json' }, tags: { name: 'weather' }, timeout: '5s' }],
    ['GET', TOOL_URL + '/search?q=' + encodeURIComponent('umbrella ' + city), null, { tags: { name: 'search' }, timeout: '5s' }],
  ]);
  check(weather, {
    'weather tool 200': (r) => r.status === 200,
    'weather for the city asked': (r) => r.json('city') === city,
  });
  check(search, {
    'search tool 200': (r) => r.status === 200,
    'search found something': (r) => r.json('results.#') > 0,
  });
  messages.push({
    role: 'user',
    content: 'Tool results: weather ' + weather.body + '; search ' + JSON.stringify(search.json('results.0')),
  });

  const answer = client.chat({ messages: messages, max_tokens: 24 });
  check(answer, {
    'turn 2 ok': (r) => r.ok,
    'turn 2 has text': (r) => r.text.length > 0,
  });
}
