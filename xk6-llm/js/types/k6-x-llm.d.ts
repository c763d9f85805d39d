// Type declarations of llmchaos's `k6/x/llm` module, for editor completion
// in scripts run by `llmchaos run` (JavaScript with a jsconfig.json, or
// TypeScript with a tsconfig.json that includes this file; see the README's
// "Editor completion"). llmchaos itself does not check types.
//
// A test (xk6-llm/js/types_test.go) keeps these declarations in step with
// the Go code: every option, request field and result field the module
// reads or returns is declared here.

declare module 'k6/x/llm' {
  /** Options of `new Client(options)`. */
  export interface ClientOptions {
    /** The server's OpenAI-compatible base URL, e.g. `http://127.0.0.1:8000/v1`. Required. */
    baseURL: string;
    /** The model requests name unless a request gives its own. */
    model?: string;
    /** The environment variable (or `-e` key) holding the API key, sent as a bearer token. */
    apiKeyEnv?: string;
    /** `request()`'s endpoint: `/chat/completions` (`chat`, the default) or `/completions`. */
    api?: 'chat' | 'completions';
    /** The request timeout as a Go duration (`"60s"`, `"2m"`); none when absent. */
    timeout?: string;
    /** The request class tag of this client's requests (thresholds select it with `{class:NAME}`). */
    class?: string;
  }

  /** One chat message. */
  export interface Message {
    role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
    content: string;
  }

  /** What `chat()`, `complete()` and `request()` take. */
  export interface Request {
    /** The conversation, for `chat()` (required there). */
    messages?: Message[];
    /** The prompt, for `complete()`. */
    prompt?: string;
    /** Overrides the client's model. */
    model?: string;
    max_tokens?: number;
    /** vLLM's min_tokens. */
    min_tokens?: number;
    /** vLLM's ignore_eos: generate max_tokens whatever the model says. */
    ignore_eos?: boolean;
    /** Stream the answer (default true): TTFT and ITL are measured on the stream. */
    stream?: boolean;
    seed?: number;
    /**
     * Cancel the request after this many content chunks: the result's
     * outcome is `cancelled` (errorClass `cancelled`), which is no error.
     */
    cancelAfterTokens?: number;
    /** Tags of the request; `class` sets its request class. */
    tags?: { class?: string; [key: string]: string | undefined };
  }

  /** Token usage as the server reported it (zeros when it did not). */
  export interface Usage {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
  }

  /**
   * The figures of one request, timed in Go by the load engine's client and
   * recorded as `llmchaos load` records them. Durations in milliseconds,
   * null when the moment did not happen (no first token, no end).
   */
  export interface Result {
    /** The request was answered in full (HTTP 2xx, the stream ended cleanly). */
    ok: boolean;
    /** `ok`, `failed` or `cancelled` (a cancel that was asked for, as with cancelAfterTokens). */
    outcome: 'ok' | 'failed' | 'cancelled';
    /** The HTTP status; 0 when no response arrived. */
    status: number;
    /** How it failed: connect, reset, timeout, http_4xx, http_429, http_5xx, protocol, cancelled; '' when ok. */
    errorClass: '' | 'connect' | 'reset' | 'timeout' | 'http_4xx' | 'http_429' | 'http_5xx' | 'protocol' | 'cancelled';
    /** A short error text (secrets scrubbed); '' when none. */
    error: string;
    /** The output text (content for chat, text for completions). */
    text: string;
    /** The finish_reason (`stop`, `length`, ...); '' when none came. */
    finishReason: string;
    usage: Usage;
    /** Time to first token: send to the first content chunk. */
    ttft: number | null;
    /** Send to the end of the stream. */
    e2e: number | null;
    /** (e2e - ttft) / (outputTokens - 1); null with at most one token. */
    tpot: number | null;
    /** Output tokens: usage.completion_tokens when reported, else content chunks counted. */
    outputTokens: number;
    /** The x-request-id sent. */
    requestId: string;
  }

  /** An OpenAI-compatible streaming client; its requests are recorded into the run. */
  export class Client {
    constructor(options: ClientOptions);
    /** POST /chat/completions. */
    chat(request: Request): Result;
    /** POST /completions. */
    complete(request: Request): Result;
    /** chat() or complete(), as the client's `api` option says. */
    request(request: Request): Result;
  }

  const llm: { Client: typeof Client };
  export default llm;
}
