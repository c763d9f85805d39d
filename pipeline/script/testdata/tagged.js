// One LLM request and one custom sample per iteration, for the hooks.
import llm from 'k6/x/llm';
import { Counter } from 'k6/metrics';

const turns = new Counter('turns');
const client = new llm.Client({ baseURL: __ENV.BASE_URL, model: __ENV.MODEL });
const other = new llm.Client({ baseURL: __ENV.BASE_URL, model: __ENV.MODEL });

export const options = { vus: 2, iterations: 6 };

export default function () {
  client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  turns.add(1);
}
