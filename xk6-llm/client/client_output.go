package client

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Output is what an answer said, besides its timings: its text and its
// tool calls.
type Output struct {
	// Text is the output text: content for chat, text for completions.
	Text string
	// ToolCalls are the answer's tool calls in the order they began; nil
	// when it made none.
	ToolCalls []ToolCall
}

// ToolCall is one tool call of an answer, as OpenAI's message.tool_calls
// holds it. A streamed answer sends it in pieces (tool_calls deltas, as
// vLLM does: the id and the function's name in the first, the arguments
// split over several), merged by their index.
type ToolCall struct {
	ID   string
	Type string // "function"
	Name string
	// Arguments is the arguments' JSON text as the model wrote it (it may
	// not parse: models make mistakes, and a cancelled stream cuts it).
	Arguments string
}

// DoOutput is Do that also returns the answer's Output. When onToken is
// set it is called with the output text of each token chunk (content or
// text; empty for a chunk that carries only reasoning or a tool call), in
// order, on the goroutine reading the stream, right after the chunk's
// arrival time was taken: its cost never enters that chunk's timing, but a
// slow onToken delays the reading of the chunks after it, so it must only
// hand the text on (copy it: the slice is reused). A non-streamed answer is
// one chunk.
//
// Tool calls are read from the chunks' delta.tool_calls (or a non-streamed
// message's tool_calls) only here, off the parser's allocation-free path
// for content chunks. An element that is not a tool call (a wrong type of
// field) is left out; it does not fail the request.
func (c *Client) DoOutput(ctx context.Context, baseURL string, req *workload.Request, res *recording.Result, onToken func(text []byte)) Output {
	out := &collector{tools: true, onToken: onToken}
	c.do(ctx, baseURL, req, res, out, nil)
	return Output{Text: out.text, ToolCalls: out.calls.calls}
}

// collector is what a caller of do wants kept besides the Result; a nil
// *collector keeps nothing (Do, the load engine's hot path).
type collector struct {
	tools   bool              // merge tool-call deltas into calls
	onToken func(text []byte) // called with each token chunk's output text

	text  string
	calls toolCallMerger
}

// toolCallDelta is one element of a delta's tool_calls array, or of a
// non-streamed message's.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// toolCallMerger merges tool-call deltas into whole calls.
type toolCallMerger struct {
	calls []ToolCall
	index []int // each call's index in the stream (-1 when none was given)
}

// add merges the elements of one tool_calls array (raw JSON text).
func (m *toolCallMerger) add(raw []byte) {
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return
	}
	for _, e := range elems {
		var d toolCallDelta
		if json.Unmarshal(e, &d) != nil {
			continue
		}
		m.merge(&d, false)
	}
}

// merge adds d to the call with its index, or starts a call (always when
// whole: d is a whole call, from a non-streamed message). A delta without
// an index (some servers leave it out) continues the last call unless it
// carries an id of its own.
func (m *toolCallMerger) merge(d *toolCallDelta, whole bool) {
	at := -1
	switch {
	case whole:
	case d.Index != nil:
		for i, x := range m.index {
			if x == *d.Index {
				at = i
				break
			}
		}
	case len(m.calls) > 0 && (d.ID == "" || m.calls[len(m.calls)-1].ID == d.ID):
		at = len(m.calls) - 1
	}
	if at < 0 {
		idx := -1
		if d.Index != nil {
			idx = *d.Index
		}
		m.calls = append(m.calls, ToolCall{})
		m.index = append(m.index, idx)
		at = len(m.calls) - 1
	}
	tc := &m.calls[at]
	if tc.ID == "" {
		tc.ID = d.ID
	}
	if tc.Type == "" {
		tc.Type = d.Type
	}
	if tc.Name == "" {
		tc.Name = d.Function.Name
	}
	tc.Arguments += argumentsText(d.Function.Arguments)
}

// argumentsText is the arguments' text: the string's value, as OpenAI
// sends them, or the JSON itself when a server sent an object.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		return jsonRawString(raw)
	}
	return string(raw)
}
