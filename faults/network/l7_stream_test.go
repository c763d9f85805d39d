package network

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestIsTokenEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   string
		want bool
	}{
		{"chat content", `data: {"choices":[{"delta":{"content":"hi"}}]}` + "\n\n", true},
		{"completion text", `data: {"choices":[{"text":"hi"}]}` + "\n\n", true},
		{"reasoning", `data: {"choices":[{"delta":{"reasoning_content":"hm"}}]}` + "\n\n", true},
		{"tool call", `data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}` + "\n\n", true},
		{"role only", `data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n", false},
		{"usage only", `data: {"choices":[],"usage":{"completion_tokens":3}}` + "\n\n", false},
		{"done", "data: [DONE]\n\n", false},
		{"comment", ": keep-alive\n\n", false},
		{"no data field", "event: ping\n\n", false},
		{"not JSON counts", "data: hello\n\n", true},
		{"no space after colon", `data:{"choices":[{"delta":{"content":"x"}}]}` + "\n\n", true},
		{"CRLF lines", "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\n", true},
		{"multi-line data", "data: {\"choices\":\ndata: [{\"text\":\"x\"}]}\n\n", true},
		{"a field that only starts with data", "datum: x\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isTokenEvent([]byte(tt.ev)); got != tt.want {
				t.Errorf("isTokenEvent(%q): got %v, want %v", tt.ev, got, tt.want)
			}
		})
	}
}

// sseSample is a stream with a role chunk, 5 tokens, a comment, usage and
// [DONE], with mixed line endings.
func sseSample() string {
	var b strings.Builder
	b.WriteString(`data: {"choices":[{"delta":{"role":"assistant"}}]}` + "\n\n")
	for i, end := range []string{"\n\n", "\r\n\r\n", "\r\r", "\n\n", "\n\n"} {
		b.WriteString(`data: {"choices":[{"delta":{"content":"t` + string(rune('0'+i)) + `"}}]}` + end)
		if i == 2 {
			b.WriteString(": comment\n\n")
		}
	}
	b.WriteString(`data: {"choices":[],"usage":{}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func TestSSEBodyPassesBytesThrough(t *testing.T) {
	in := sseSample()
	for _, name := range []string{"whole", "one byte at a time"} {
		t.Run(name, func(t *testing.T) {
			var src io.Reader = strings.NewReader(in)
			if name != "whole" {
				src = iotest.OneByteReader(src)
			}
			b := newSSEBody(context.Background(), io.NopCloser(src), &fate{chunkDelay: time.Nanosecond})
			got, err := io.ReadAll(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != in {
				t.Errorf("got %q, want the input unchanged", got)
			}
			if b.tokens != 5 {
				t.Errorf("tokens: got %d, want 5", b.tokens)
			}
		})
	}
}

func TestSSEBodyCutsAtEventBoundary(t *testing.T) {
	in := sseSample()
	for after := range 6 {
		for _, oneByte := range []bool{false, true} {
			var src io.Reader = strings.NewReader(in)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			b := newSSEBody(context.Background(), io.NopCloser(src), &fate{cut: true, cutAfter: after})
			got, err := io.ReadAll(b)
			if !errors.Is(err, ErrStreamCut) {
				t.Fatalf("after %d: got %v, want ErrStreamCut", after, err)
			}
			// The output is exactly the input up to the end of token #after.
			want := ""
			if after > 0 {
				i := strings.Index(in, `"t`+string(rune('0'+after-1))+`"`)
				j := i + strings.Index(in[i:], "}]}") + 3
				for j < len(in) && (in[j] == '\n' || in[j] == '\r') {
					j++
				}
				if after == 3 {
					// Token t2 ends with "\r\r"; the comment after it is not sent.
					j = i + strings.Index(in[i:], "\r\r") + 2
				}
				want = in[:j]
			}
			if oneByte && strings.HasSuffix(want, "\r\n\r\n") {
				// A CR that ends an event is passed on at once; the LF of its
				// CRLF is still in the next read when the cut comes. Clients
				// treat the CR alone as the end of the line.
				want = strings.TrimSuffix(want, "\n")
			}
			if string(got) != want {
				t.Errorf("after %d (one byte %v): got %q, want %q", after, oneByte, got, want)
			}
		}
	}
}

func TestSSEBodyStallsOnce(t *testing.T) {
	in := sseSample()
	const stall = 30 * time.Millisecond
	b := newSSEBody(context.Background(), io.NopCloser(strings.NewReader(in)), &fate{stall: true, stallAfter: 2, stallFor: stall})
	var out bytes.Buffer
	buf := make([]byte, 4096)
	var stalls []time.Duration
	for {
		start := time.Now()
		n, err := b.Read(buf)
		if el := time.Since(start); el >= stall {
			stalls = append(stalls, el)
			if !bytes.Contains(out.Bytes(), []byte(`"t1"`)) || bytes.Contains(out.Bytes(), []byte(`"t2"`)) {
				t.Errorf("stall after %q, want right after token t1", out.String())
			}
		}
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(stalls) != 1 {
		t.Errorf("stalls: got %v, want exactly one", stalls)
	}
	if out.String() != in {
		t.Error("bytes changed by the stall")
	}
}

func TestSSEBodyStallHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := newSSEBody(ctx, io.NopCloser(strings.NewReader(sseSample())), &fate{stall: true, stallAfter: 0, stallFor: time.Hour})
	cancel()
	if _, err := b.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("read during a stall of a cancelled request: got %v, want context.Canceled", err)
	}
}
