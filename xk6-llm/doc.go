// Package llm is llmchaos's load engine (the folder is named xk6-llm for its
// role as a k6-style LLM load module; it contains no k6 code). It owns the
// OpenAI-compatible streaming client and its SSE decoder, the arrival
// processes (pure pacers on absolute-time schedules), workloads and datasets,
// the engine that turns a schedule into requests, and the Result record that
// every scheduled request ends as, exactly once.
package llm
