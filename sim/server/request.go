package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"

	"github.com/llmchaos/llmchaos/sim"
)

// maxBodyBytes is the largest request body accepted; larger ones get 413.
const maxBodyBytes = 16 << 20

// completionRequest is the part of an OpenAI chat or text completion request
// the simulator honours; other fields are ignored, as OpenAI ignores unknown ones.
type completionRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Seed        *int64   `json:"seed"`
	N           *int     `json:"n"`
	Temperature *float64 `json:"temperature"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parsed is a validated request.
type parsed struct {
	chat         bool
	stream       bool
	includeUsage bool
	req          sim.Request
}

// readBody reads at most maxBodyBytes of r's body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	tooLarge := &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than %d bytes", maxBodyBytes)}
	if r.ContentLength > maxBodyBytes {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, badRequest("reading the request body: " + err.Error())
	}
	return body, nil
}

// parseCompletion decodes and validates a chat (chat true) or text
// completion request against the served model.
func parseCompletion(body []byte, chat bool, model string) (*parsed, *apiError) {
	var cr completionRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, badRequest("invalid JSON body: " + err.Error())
	}
	if cr.Model != model {
		return nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
			Message: fmt.Sprintf("The model `%s` does not exist.", cr.Model)}
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, paramError("n", fmt.Sprintf("n must be 1, got %d", *cr.N))
	}
	p := &parsed{chat: chat, stream: cr.Stream, req: sim.Request{IgnoreEOS: cr.IgnoreEOS, Seed: cr.Seed,
		Greedy: cr.Temperature != nil && *cr.Temperature == 0}}
	if cr.StreamOptions != nil {
		if !cr.Stream {
			return nil, paramError("stream_options", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = cr.StreamOptions.IncludeUsage
	}
	switch {
	case cr.MaxCompletionTokens != nil:
		p.req.MaxTokens = *cr.MaxCompletionTokens
	case cr.MaxTokens != nil:
		p.req.MaxTokens = *cr.MaxTokens
	}
	if (cr.MaxCompletionTokens != nil && *cr.MaxCompletionTokens < 1) || (cr.MaxTokens != nil && *cr.MaxTokens < 1) {
		return nil, paramError("max_tokens", "max_tokens must be at least 1")
	}
	if cr.MinTokens != nil {
		if *cr.MinTokens < 0 {
			return nil, paramError("min_tokens", "min_tokens must not be negative")
		}
		p.req.MinTokens = *cr.MinTokens
	}
	var err *apiError
	if chat {
		p.req.PromptTokens, p.req.PromptHash, err = chatPromptTokens(cr.Messages)
	} else {
		p.req.PromptTokens, p.req.PromptHash, err = completionPromptTokens(cr.Prompt)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// promptHash identifies a prompt by its texts (a chat's message texts in
// order, a completion's prompt), so that the same words give the same
// greedy answer whichever endpoint asked.
func promptHash(texts ...string) uint64 {
	h := fnv.New64a()
	for i, t := range texts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(t))
	}
	return h.Sum64()
}

// chatPromptTokens applies sim.ChatPromptTokens to the messages' text
// content, and returns their promptHash.
func chatPromptTokens(msgs []chatMessage) (int, uint64, *apiError) {
	if len(msgs) == 0 {
		return 0, 0, paramError("messages", "messages must not be empty")
	}
	n := 0
	texts := make([]string, 0, len(msgs))
	for i, m := range msgs {
		text, err := messageText(m.Content)
		if err != nil {
			return 0, 0, paramError("messages", fmt.Sprintf("messages[%d].content: %v", i, err))
		}
		n += sim.ChatPromptTokens(text)
		texts = append(texts, text)
	}
	return n, promptHash(texts...), nil
}

// messageText returns a message's text: a string, or the concatenated text
// parts of an array of content parts; null is empty.
func messageText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of content parts")
	}
	var b []byte
	for _, p := range parts {
		b = append(b, p.Text...)
	}
	return string(b), nil
}

// completionPromptTokens counts a text completion prompt: a string, an array
// of one string, or an array of token ids (counted as given); and returns
// its promptHash.
func completionPromptTokens(raw json.RawMessage) (int, uint64, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, 0, paramError("prompt", "prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return sim.CountTokens(s), promptHash(s), nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return 0, 0, paramError("prompt", fmt.Sprintf("only one prompt per request is supported, got %d", len(ss)))
		}
		return sim.CountTokens(ss[0]), promptHash(ss[0]), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids), promptHash(string(raw)), nil
	}
	return 0, 0, paramError("prompt", "prompt must be a string, an array of one string or an array of token ids")
}
