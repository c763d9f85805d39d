// A chat script in TypeScript: llmchaos transpiles it in-process (types are
// stripped, not checked) and errors point into this file. The editor gets
// completion for k6/x/llm from xk6-llm/js/types (see tsconfig.json here).
//
//   llmchaos run examples/scripts/typescript.ts -e BASE_URL=http://127.0.0.1:8000/v1 -e MODEL=llmchaos-sim
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import llm from 'k6/x/llm';
import type { Request, Result } from 'k6/x/llm';

interface Question {
  topic: string;
  maxTokens: number;
}

type Verdict = 'answered' | 'truncated' | 'failed';

const questions: readonly Question[] = [
  { topic: 'the tides', maxTokens: 8 },
  { topic: 'photosynthesis', maxTokens: 12 },
  { topic: 'the speed of light', maxTokens: 16 },
];

const client = new llm.Client({
  baseURL: __ENV.BASE_URL ?? 'http://127.0.0.1:8000/v1',
  model: __ENV.MODEL ?? 'llmchaos-sim',
  timeout: '30s',
});

const answered = new Counter('answered');
const decodeTime = new Trend('decode_time', true);

export const options = {
  scenarios: {
    questions: { executor: 'shared-iterations', vus: 2, iterations: Number(__ENV.ITERATIONS ?? 6) },
  },
  thresholds: {
    ttft: ['p(99)<2s'],
    checks: ['rate==1'],
    answered: ['count>0'],
  },
};

function ask(q: Question): Result {
  const req: Request = {
    messages: [{ role: 'user', content: `Explain ${q.topic} in one sentence.` }],
    max_tokens: q.maxTokens,
  };
  return client.chat(req);
}

function verdict(res: Result): Verdict {
  if (!res.ok) return 'failed';
  return res.finishReason === 'length' ? 'truncated' : 'answered';
}

export default function (): void {
  const q = questions[__ITER % questions.length];
  const res = ask(q);
  const v = verdict(res);
  check(res, {
    'status 200': (r: Result) => r.status === 200,
    'not failed': () => v !== 'failed',
    'within max_tokens': (r: Result) => r.outputTokens <= q.maxTokens,
  });
  if (v !== 'failed') {
    answered.add(1);
  }
  if (res.e2e !== null && res.ttft !== null) {
    decodeTime.add(res.e2e - res.ttft);
  }
}
