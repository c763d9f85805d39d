package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Health sends GET /health to addr (host:port) with a client timeout and
// returns the status code and body; code is 0 when nothing answers in time.
func Health(addr string, timeout time.Duration) (code int, body string) {
	resp, err := getHealth(addr, timeout)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a cut body still carries the status
	return resp.StatusCode, string(b)
}

// HealthCode is Health's status code alone; it does not wait for the body,
// so a replica that hangs after its headers still counts as answering.
func HealthCode(addr string, timeout time.Duration) int {
	resp, err := getHealth(addr, timeout)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getHealth(addr string, timeout time.Duration) (*http.Response, error) {
	c := &http.Client{Timeout: timeout}
	return c.Get("http://" + addr + "/health")
}

// StreamResult is what a client saw of one streamed completion.
type StreamResult struct {
	// Chunks counts the content chunks (non-empty "text") received.
	Chunks int
	// Done is whether the stream ended with "data: [DONE]".
	Done bool
	// Err is the transport error, if any.
	Err error
	// Status is the HTTP status; the body is drained unread when it is not 200.
	Status int
}

// Stream posts a streaming completion of up to maxTokens tokens (with
// ignore_eos, so a simulator emits all of them) to the OpenAI API at addr
// and reads it to the end or until ctx ends. onChunk, if not nil, is called
// on the calling goroutine with the running count after each content chunk.
func Stream(ctx context.Context, addr string, maxTokens int, onChunk func(n int)) StreamResult {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"tell me a long story","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return StreamResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return StreamResult{Err: err}
	}
	defer resp.Body.Close()
	r := StreamResult{Status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			r.Done = true
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`):
			r.Chunks++
			if onChunk != nil {
				onChunk(r.Chunks)
			}
		}
	}
	r.Err = sc.Err()
	return r
}
