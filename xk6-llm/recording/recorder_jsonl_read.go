package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// requestLine is one line of RequestWriter, as decoded by ReadRequests.
type requestLine struct {
	Seq              uint64   `json:"seq"`
	RequestID        string   `json:"request_id"`
	Session          uint64   `json:"session"`
	Turn             int      `json:"turn"`
	Phase            string   `json:"phase"`
	Fault            string   `json:"fault"`
	Class            string   `json:"class"`
	Endpoint         string   `json:"endpoint"`
	Scenario         string   `json:"scenario"`
	Outcome          string   `json:"outcome"`
	ErrorClass       string   `json:"error_class"`
	HTTPStatus       int      `json:"http_status"`
	Error            string   `json:"error"`
	ScheduledUs      int64    `json:"scheduled_us"`
	DequeuedUs       int64    `json:"dequeued_us"`
	SentUs           int64    `json:"sent_us"`
	FirstTokenUs     int64    `json:"first_token_us"`
	EndUs            int64    `json:"end_us"`
	ConnectUs        int64    `json:"connect_us"`
	Reconnects       int      `json:"reconnects"`
	InputTokens      int      `json:"input_tokens"`
	OutputTokens     int      `json:"output_tokens"`
	UsageReported    bool     `json:"usage_reported"`
	ContentChunks    int      `json:"content_chunks"`
	PromptTokensSent int      `json:"prompt_tokens_sent"`
	FinishReason     string   `json:"finish_reason"`
	OutputChars      int      `json:"output_chars"`
	NgramsTotal      int      `json:"ngrams_total"`
	NgramsRepeated   int      `json:"ngrams_repeated"`
	ITLUs            []uint32 `json:"itl_us"`
}

// IsRequestLine reports whether line is one of RequestWriter's lines
// (each starts with its seq field), so that a reader can pick them out of
// a stream that holds other lines too (a shard's pod log).
func IsRequestLine(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"seq":`)) }

// ReadRequests reads the lines RequestWriter wrote from r and calls fn
// with each one's Result (the derived fields, ttft_us and the like, are
// recomputed from the times; times lose what is below a microsecond).
// Lines that are not request lines (see IsRequestLine) are skipped when
// lenient, else they are an error naming the line.
func ReadRequests(r io.Reader, lenient bool, fn func(*Result)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if !IsRequestLine(line) {
			if lenient || len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return fmt.Errorf("request line %d: not a request (%.40q)", n, line)
		}
		res, err := DecodeRequestLine(line)
		if err != nil {
			return fmt.Errorf("request line %d: %w", n, err)
		}
		fn(res)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read requests: %w", err)
	}
	return nil
}

// DecodeRequestLine decodes one line RequestWriter wrote.
func DecodeRequestLine(line []byte) (*Result, error) {
	var l requestLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out, ok := parseOutcome(l.Outcome)
	if !ok {
		return nil, fmt.Errorf("seq %d: outcome %q is not ok, failed, cancelled or dropped", l.Seq, l.Outcome)
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return &Result{
		Seq: l.Seq, RequestID: l.RequestID, Session: l.Session, Turn: l.Turn,
		Tags:      Tags{Phase: l.Phase, Fault: l.Fault, Class: l.Class, Endpoint: l.Endpoint, Scenario: l.Scenario},
		Scheduled: us(l.ScheduledUs), Dequeued: us(l.DequeuedUs), Sent: us(l.SentUs), FirstToken: us(l.FirstTokenUs), End: us(l.EndUs),
		Connect: us(l.ConnectUs), Reconnects: l.Reconnects, ITLMicros: l.ITLUs,
		Outcome: out, Class: ErrorClass(l.ErrorClass), HTTPStatus: l.HTTPStatus, Err: l.Error,
		InputTokens: l.InputTokens, OutputTokens: l.OutputTokens, ContentChunks: l.ContentChunks, UsageReported: l.UsageReported,
		PromptTokensSent: l.PromptTokensSent, FinishReason: l.FinishReason, OutputChars: l.OutputChars,
		NgramsTotal: l.NgramsTotal, NgramsRepeated: l.NgramsRepeated,
	}, nil
}

func parseOutcome(s string) (Outcome, bool) {
	for _, o := range []Outcome{OutcomeOK, OutcomeFailed, OutcomeCancelled, OutcomeDropped} {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}
