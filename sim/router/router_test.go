package router

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// replica is a simulator behind a TCP front that the test can kill: its
// connections are cut mid-stream, as when a replica's process dies.
type replica struct {
	url  string
	ln   net.Listener
	mu   sync.Mutex
	conn []net.Conn
	dead atomic.Bool
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	c := sim.DefaultConfig()
	c.Latency, c.TTFT, c.ITL = sim.LatencyConstant, 10*time.Millisecond, 15*time.Millisecond
	backend := strings.TrimPrefix(servertest.Start(t, server.Options{Config: c}), "http://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{url: "http://" + ln.Addr().String(), ln: ln}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", backend)
			if err != nil {
				in.Close()
				continue
			}
			r.mu.Lock()
			r.conn = append(r.conn, in, out)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(r.kill)
	return r
}

// kill cuts every connection and stops accepting.
func (r *replica) kill() {
	r.dead.Store(true)
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conn {
		c.Close()
	}
}

// answer is what a client read of a streamed answer.
type answer struct {
	chunks     []string
	ids        map[string]bool
	completion int
	done       bool
}

func (a answer) text() string { return strings.Join(a.chunks, "") }

// ask streams a greedy chat answer from url; after > 0 calls it once that
// many content chunks have arrived.
func ask(t *testing.T, url string, after int, at func()) answer {
	t.Helper()
	body := `{"model":"llmchaos-sim","messages":[{"role":"user","content":"migrate me"}],"max_tokens":30,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	a := answer{ids: map[string]bool{}}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return a
		}
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			a.done = true
			return a
		}
		var c struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		a.ids[c.ID] = true
		if c.Usage != nil {
			a.completion = c.Usage.CompletionTokens
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			a.chunks = append(a.chunks, c.Choices[0].Delta.Content)
			if len(a.chunks) == after {
				at()
			}
		}
	}
}

// spliced reports whether a is the reference resumed at a shift of its
// break point: the reference's first p tokens (p ≥ 10: the replica was
// killed once the client had 10, and a few more may have been on their
// way), then the reference from p+shift on.
func spliced(a answer, ref answer, shift int) bool {
	for p := 10; p < len(ref.chunks) && p+shift < len(ref.chunks); p++ {
		want := append(append([]string(nil), ref.chunks[:p]...), ref.chunks[p+shift:]...)
		if slices.Equal(a.chunks, want) {
			return true
		}
	}
	return false
}

// A stream whose replica dies after 10 tokens continues on the other
// replica: migrated cleanly it is the same answer, with one id and the
// whole answer's usage; migrated 4 tokens early it repeats them; 4 tokens
// late it lacks them. Without migration it is cut.
func TestMigration(t *testing.T) {
	spare := startReplica(t)
	ref := ask(t, spare.url, 0, nil)
	if !ref.done || len(ref.chunks) != 30 {
		t.Fatalf("reference: %d chunks, done %v", len(ref.chunks), ref.done)
	}
	for _, tt := range []struct {
		mode string
		want func(a answer) string
	}{
		{MigrateClean, func(a answer) string {
			if a.text() != ref.text() || a.completion != 30 {
				return "want the reference answer and usage 30"
			}
			return ""
		}},
		{MigrateDuplicate, func(a answer) string {
			if !spliced(a, ref, -4) || a.completion != 30 {
				return "want 4 tokens twice where the stream broke (34 chunks), usage 30"
			}
			return ""
		}},
		{MigrateDrop, func(a answer) string {
			if !spliced(a, ref, 4) {
				return "want 4 tokens missing where the stream broke (26 chunks)"
			}
			return ""
		}},
		{MigrateOff, func(a answer) string {
			if a.done || len(a.chunks) < 10 || len(a.chunks) >= 30 || a.text() != strings.Join(ref.chunks[:len(a.chunks)], "") {
				return "want the stream cut after the kill: a prefix of the reference"
			}
			return ""
		}},
	} {
		t.Run("mode "+tt.mode, func(t *testing.T) {
			doomed := startReplica(t)
			rt, err := New(Config{Mode: tt.mode, Upstreams: func() []string {
				if doomed.dead.Load() {
					return []string{spare.url}
				}
				return []string{doomed.url}
			}})
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(rt)
			defer front.Close()
			a := ask(t, front.URL, 10, doomed.kill)
			if !doomed.dead.Load() {
				t.Fatal("the replica was never killed")
			}
			if msg := tt.want(a); msg != "" {
				t.Errorf("%s: got %d chunks %q (usage %d, done %v), reference %q", msg, len(a.chunks), a.text(), a.completion, a.done, ref.text())
			}
			if len(a.ids) != 1 {
				t.Errorf("the client saw ids %v: a migrating router keeps one", a.ids)
			}
		})
	}
}

func TestNewRefusesUnknownMode(t *testing.T) {
	if _, err := New(Config{Mode: "teleport", Upstreams: func() []string { return nil }}); err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("New: %v", err)
	}
}
