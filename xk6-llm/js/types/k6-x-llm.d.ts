// Type declarations of llmchaos's `k6/x/llm` module, for editor completion
// in scripts run by `llmchaos run` (JavaScript with a jsconfig.json, or
// TypeScript with a tsconfig.json that includes this file; see docs/scripts.md,
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
    /**
     * The API key itself, sent as a bearer token (over `apiKeyEnv`). Never
     * logged, printed or reported; prefer `apiKeyEnv` (or `apiKey: __ENV.KEY`)
     * to keep it out of the script.
     */
    apiKey?: string;
    /** The environment variable (or `-e` key) holding the API key, sent as a bearer token. */
    apiKeyEnv?: string;
    /** `request()`'s endpoint: `/chat/completions` (`chat`, the default) or `/completions`. */
    api?: 'chat' | 'completions';
    /** The request timeout as a Go duration (`"60s"`, `"2m"`); none when absent. */
    timeout?: string;
    /** The request class tag of this client's requests (thresholds select it with `{class:NAME}`). */
    class?: string;
  }

  /**
   * One chat message. A message with more than `role` and a string
   * `content` (an assistant's `tool_calls`, a tool's `tool_call_id`, content
   * parts) is sent as it is.
   */
  export interface Message {
    role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
    content: string | null | unknown[];
    /** An assistant message's tool calls (a result's `toolCalls` fits here). */
    tool_calls?: ToolCall[];
    /** A tool message's answer to this call id. */
    tool_call_id?: string;
    name?: string;
  }

  /** One tool call, in OpenAI's shape. */
  export interface ToolCall {
    id: string;
    type: 'function' | (string & {});
    function: ToolCallFunction;
  }

  /** The function a tool call calls. */
  export interface ToolCallFunction {
    name: string;
    /** The arguments' JSON text as the model wrote it (parse it with JSON.parse; it may be malformed). */
    arguments: string;
  }

  /** One tool the model may call (OpenAI's `tools` element), sent as it is. */
  export interface Tool {
    type: 'function';
    function: { name: string; description?: string; parameters?: object; strict?: boolean };
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
    temperature?: number;
    top_p?: number;
    stop?: string | string[];
    /** Tools the model may call, sent as they are; the calls come back in the result's `toolCalls`. */
    tools?: Tool[];
    tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
    /** e.g. `{type: 'json_object'}` or `{type: 'json_schema', json_schema: {...}}`, sent as it is. */
    response_format?: object;
    /** More body fields, sent as they are (`{top_k: 20, repetition_penalty: 1.1}`); the named fields above win. */
    extra_body?: Record<string, unknown>;
    /**
     * Stream the answer (default true): TTFT and ITL are measured on the
     * stream. false asks for one JSON answer, still timed (TTFT equals E2E).
     */
    stream?: boolean;
    seed?: number;
    /**
     * Cancel the request after this many content chunks: the result's
     * outcome is `cancelled` (errorClass `cancelled`), which is no error.
     */
    cancelAfterTokens?: number;
    /**
     * Called with the text of each token chunk (empty for a chunk that
     * carries only reasoning or a tool call), in order, before the call
     * returns. The stream is read and every chunk's arrival is timed in Go on
     * another goroutine, which queues the texts; the callback runs on the
     * VU's own, so a slow callback never changes a timing. If it throws, the
     * request is cancelled (recorded with outcome `cancelled`) and the
     * exception propagates.
     */
    onToken?: (text: string) => void;
    /** Tags of the request; `class` sets its request class. */
    tags?: { class?: string; [key: string]: string | undefined };
  }

  /**
   * The request's inter-token latencies: the gaps between its token chunks
   * (what the `itl` metric pools over all requests), in milliseconds.
   */
  export interface ITL {
    /** The median gap (nearest rank); null without a gap. */
    p50: number | null;
    /** The longest gap; null without a gap. */
    max: number | null;
    /** How many gaps: token chunks − 1 (0 for at most one chunk). */
    count: number;
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
    /** The finish_reason (`stop`, `length`, `tool_calls`, ...); '' when none came. */
    finishReason: string;
    /** The tool calls the answer made (merged from the stream's deltas); [] when none. */
    toolCalls: ToolCall[];
    usage: Usage;
    /** Time to first token: send to the first content chunk. */
    ttft: number | null;
    /** Send to the end of the stream. */
    e2e: number | null;
    /** (e2e - ttft) / (outputTokens - 1); null with at most one token. */
    tpot: number | null;
    /** The gaps between token chunks. */
    itl: ITL;
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
