package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRequestWriterLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewRequestWriter(&buf)
	r := NewRecorder(Options{SaveRequests: w})
	ok := recRes(Tags{Phase: "fault", Fault: "kill", Class: "chat", Endpoint: "http://127.0.0.1:8000/v1"},
		time.Second, 50_000, 250_000, 5, 40_000, 50_000, 60_000, 50_000)
	ok.Seq, ok.RequestID, ok.Session, ok.Turn = 7, "req-7", 3, 1
	ok.Scheduled = time.Second - 20*time.Microsecond
	ok.Dequeued = ok.Scheduled + 5*time.Microsecond
	ok.InputTokens, ok.PromptTokensSent, ok.NgramsTotal, ok.NgramsRepeated = 120, 118, 2, 1
	failed := recFailed(Tags{}, 2*time.Second, ClassHTTP5xx, 503)
	failed.Seq = 8
	failed.Err = "bad \"gateway\"\n\x00<script>\u2028 \xff end"
	r.Record(ok)
	r.Record(failed)
	r.Record(&Result{Seq: 9, Scheduled: 3 * time.Second, Outcome: OutcomeDropped})
	if buf.Len() != 0 {
		t.Errorf("%d bytes written before Flush; want them buffered", buf.Len())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Lines() != 3 {
		t.Errorf("lines = %d, want 3", w.Lines())
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), buf.String())
	}
	var got []map[string]any
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
		got = append(got, m)
	}
	want := map[string]any{
		"seq": 7.0, "request_id": "req-7", "session": 3.0, "turn": 1.0, "phase": "fault", "fault": "kill",
		"class": "chat", "endpoint": "http://127.0.0.1:8000/v1", "outcome": "ok", "http_status": 200.0,
		"scheduled_us": 999_980.0, "dequeued_us": 999_985.0, "sent_us": 1e6, "first_token_us": 1_050_000.0,
		"end_us": 1_250_000.0, "ttft_us": 50_000.0, "e2e_us": 250_000.0, "tpot_us": 50_000.0,
		"send_lag_us": 20.0, "client_queue_us": 5.0, "input_tokens": 120.0, "output_tokens": 5.0,
		"usage_reported": true, "content_chunks": 5.0, "prompt_tokens_sent": 118.0, "finish_reason": "stop",
		"output_chars": 20.0, "ngrams_total": 2.0, "ngrams_repeated": 1.0,
		"itl_us": []any{40_000.0, 50_000.0, 60_000.0, 50_000.0},
	}
	if !jsonEqual(got[0], want) {
		t.Errorf("ok line = %v\nwant      %v", got[0], want)
	}
	if got[1]["error"] != "bad \"gateway\"\n\x00<script>\u2028 \ufffd end" || got[1]["error_class"] != "http_5xx" || got[1]["http_status"] != 503.0 {
		t.Errorf("failed line = %v", got[1])
	}
	if _, ok := got[1]["ttft_us"]; ok {
		t.Error("failed line without a first token has ttft_us")
	}
	if got[2]["outcome"] != "dropped" {
		t.Errorf("dropped line = %v", got[2])
	}
	for _, k := range []string{"e2e_us", "send_lag_us", "client_queue_us"} {
		if _, ok := got[2][k]; ok {
			t.Errorf("dropped line has %s", k)
		}
	}
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestRequestWriterConcurrentWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewRequestWriter(&buf)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				res := recRes(Tags{Class: "c"}, time.Second, 100, 1000, 3, 1, 2, 3)
				res.Seq = uint64(g*500 + i)
				_ = w.Write(res)
			}
		})
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := make(map[float64]bool)
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("interleaved line: %v: %s", err, sc.Text())
		}
		seen[m["seq"].(float64)] = true
	}
	if len(seen) != 4000 {
		t.Errorf("distinct lines = %d, want 4000", len(seen))
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestRequestWriterStickyError(t *testing.T) {
	fw := &failingWriter{}
	w := NewRequestWriter(fw)
	gaps := make([]uint32, 40_000)
	for i := range gaps {
		gaps[i] = 100_000
	}
	res := recRes(Tags{}, time.Second, 100, 1000, 3, gaps...) // a 280 KB line, larger than the buffer
	if err := w.Write(res); err == nil {
		t.Fatal("Write: want the writer's error")
	}
	if err := w.Write(res); err == nil || fw.n != 1 {
		t.Errorf("second Write: err %v after %d writes; want the sticky error and no new write", err, fw.n)
	}
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush = %v, want the first error", err)
	}
}

func TestRequestWriterDoesNotAllocate(t *testing.T) {
	w := NewRequestWriter(io.Discard)
	res := recRes(Tags{Class: "chat"}, time.Second, 100, 1000, 3, 1, 2, 3)
	_ = w.Write(res)
	if n := testing.AllocsPerRun(100, func() { _ = w.Write(res) }); n != 0 {
		t.Errorf("Write allocates %v times per line, want 0", n)
	}
}
