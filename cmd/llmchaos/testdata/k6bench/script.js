// A chat-completions streaming benchmark in the shape of llama.cpp's server
// bench script (tools/server/bench/script.js), which its bench.py runs as
// `k6 run script.js --duration D --iterations N --vus P --summary-export
// FILE --out csv=FILE`: SSE streams through xk6-sse, per-token trends,
// token counters and one check per completion. Written for these tests.
import sse from 'k6/x/sse';
import { check, sleep } from 'k6';
import { SharedArray } from 'k6/data';
import { Counter, Rate, Trend } from 'k6/metrics';
import exec from 'k6/execution';

const serverURL = __ENV.SERVER_BENCH_URL ? __ENV.SERVER_BENCH_URL : 'http://localhost:8080/v1';
const model = __ENV.SERVER_BENCH_MODEL_ALIAS ? __ENV.SERVER_BENCH_MODEL_ALIAS : 'my-model';
const maxTokens = __ENV.SERVER_BENCH_MAX_TOKENS ? parseInt(__ENV.SERVER_BENCH_MAX_TOKENS) : 16;

const prompts = new SharedArray('prompts', function () {
    return [
        'Tell me about the lighthouse keeper.',
        'Write a haiku about the sea.',
        'Explain keep-alive connections.',
        'List three prime numbers.',
    ];
});

const promptTokens = new Trend('llamacpp_prompt_tokens');
const completionTokens = new Trend('llamacpp_completion_tokens');
const tokensSecond = new Trend('llamacpp_tokens_second');
const promptProcessingSecond = new Trend('llamacpp_prompt_processing_second');
const emitFirstToken = new Trend('llamacpp_emit_first_token_second', true);
const promptTokensTotal = new Counter('llamacpp_prompt_tokens_total_counter');
const completionTokensTotal = new Counter('llamacpp_completion_tokens_total_counter');
const completionsTruncated = new Rate('llamacpp_completions_truncated_rate');
const completionsStop = new Rate('llamacpp_completions_stop_rate');

export const options = {
    thresholds: {
        llamacpp_completions_truncated_rate: [
            { threshold: 'rate < 0.8', abortOnFail: true, delayAbortEval: '1m' },
        ],
    },
    duration: '10m',
    vus: 8,
};

export default function () {
    const prompt = prompts[exec.scenario.iterationInTest % prompts.length];
    const body = {
        messages: [
            { role: 'system', content: 'You are a helpful assistant.' },
            { role: 'user', content: prompt },
        ],
        model: model,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: maxTokens,
    };
    const params = { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } };

    const startTime = new Date();
    let promptEvalEndTime = null;
    let promptTokensN = 0;
    let completionTokensN = 0;
    let finishReason = null;

    const res = sse.open(`${serverURL}/chat/completions`, params, function (client) {
        client.on('event', function (event) {
            if (promptEvalEndTime == null) {
                promptEvalEndTime = new Date();
            }
            if (event.data === '[DONE]' || event.data === '') {
                return;
            }
            const chunk = JSON.parse(event.data);
            if (chunk.choices && chunk.choices.length > 0 && chunk.choices[0].finish_reason) {
                finishReason = chunk.choices[0].finish_reason;
            }
            if (chunk.usage) {
                promptTokensN = chunk.usage.prompt_tokens;
                completionTokensN = chunk.usage.completion_tokens;
            }
        });
        client.on('error', function (e) {
            console.log('An unexpected error occurred: ', e.error());
            throw e;
        });
    });

    check(res, { 'success completion': (r) => r.status === 200 });

    const endTime = new Date();
    const promptEvalTime = promptEvalEndTime - startTime;
    if (promptEvalTime > 0) {
        promptProcessingSecond.add(promptTokensN / promptEvalTime * 1.e3);
    }
    emitFirstToken.add(promptEvalTime);
    const completionTime = endTime - promptEvalEndTime;
    if (completionTime > 0) {
        tokensSecond.add(completionTokensN / completionTime * 1.e3);
    }
    promptTokens.add(promptTokensN);
    completionTokens.add(completionTokensN);
    promptTokensTotal.add(promptTokensN);
    completionTokensTotal.add(completionTokensN);
    completionsTruncated.add(finishReason === 'length');
    completionsStop.add(finishReason === 'stop');

    sleep(0.1);
}
