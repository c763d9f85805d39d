package workload

import "time"

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what the client sends for one scheduled request. The engine
// builds it from a workload's Session and Turn; the client turns it into an
// OpenAI-compatible HTTP request.
type Request struct {
	Chat      bool      // true: /chat/completions with Messages; false: /completions with Prompt
	Messages  []Message // chat history including the new user turn
	Prompt    string    // completions prompt
	Model     string
	MaxTokens int // 0: not sent
	MinTokens int // 0: not sent
	IgnoreEOS bool
	Stream    bool // almost always true; stream_options.include_usage is then always sent
	Seed      *int64

	// Extra are more fields of the JSON body (temperature, top_p, stop,
	// tools, tool_choice, response_format, or any other the server takes),
	// set over the client's own: an Extra "messages" replaces Messages in
	// the body (for messages with fields Message lacks, like tool calls).
	// Values are encoded with encoding/json. nil: none, and the body is
	// encoded without a second pass.
	Extra map[string]any

	// PromptTokens is the client's estimate of the prompt length, built with
	// the simulator's documented approximation; server usage stays authoritative.
	PromptTokens int

	// Cancellation plan: the client cancels the request on purpose after
	// this many content chunks or this much time since send (0: never).
	CancelAfterTokens int
	CancelAfter       time.Duration
}

// Turn is one user turn of a session.
type Turn struct {
	User              string // user message (chat) or prompt text (completions)
	UserTokens        int    // estimate of User's length in tokens
	MaxTokens         int
	MinTokens         int
	IgnoreEOS         bool
	CancelAfterTokens int
	CancelAfter       time.Duration
}

// Session is what a workload draws for each arrival: a plain request is a
// session of one turn. Later turns are sent ThinkTime after the previous turn
// ends, with the conversation so far (history grows), and are recorded as
// their own Results.
type Session struct {
	Class     string // request class tag, e.g. the preset name
	Chat      bool
	System    string // shared-prefix system prompt ("" for none)
	SystemTok int    // estimate of System's length in tokens
	Turns     []Turn
	ThinkTime time.Duration
}
