// Every request fails (the server answers 500): an abortOnFail threshold
// on error_rate stops the run over the live window.
import llm from 'k6/x/llm';

const client = new llm.Client({ baseURL: __ENV.BASE_URL, model: 'm' });

export const options = {
  scenarios: { chat: { executor: 'constant-arrival-rate', rate: 20, duration: '60s', preAllocatedVUs: 4 } },
  thresholds: { error_rate: [{ threshold: 'rate<0.5', abortOnFail: true, delayAbortEval: '1s' }] },
};

export default function () {
  client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
}
