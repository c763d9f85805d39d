package network

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// resendGap is the pause before a resent span in these tests: the client
// tells a resume point by a gap several times the stream's mean, which a
// loaded machine's scheduling must not be able to fake or hide.
const resendGap = 400 * time.Millisecond

// stream.resume in front of the real simulator: a faithful resume (the
// same greedy request sent again, the continuation taken from the token
// the first stream reached, given the first stream's id) gives the
// reference answer, clean; one that sends 4 delivered tokens again is
// found as integrity_resume_repeat. Once the toxic is removed the same
// request gets the reference again, and the toxic acts no more.
func TestStreamResumeAgainstSim(t *testing.T) {
	upstream := startSimReplica(t, 20*time.Millisecond, 5*time.Millisecond)
	for _, tt := range []struct {
		name   string
		params *ResumeParams
		class  recording.ErrorClass
	}{
		{"faithful", &ResumeParams{AfterTokens: 8}, recording.ClassNone},
		{"after the first token", &ResumeParams{AfterTokens: 1, Gap: time.Millisecond}, recording.ClassNone},
		{"resend", &ResumeParams{AfterTokens: 8, Resend: 4, Gap: resendGap}, recording.ClassIntegrityResumeRepeat},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, upstream, ModeHTTP)
			base := "http://" + p.Addr()
			c, err := client.New(client.Options{Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			refRes, ref := greedyAsk(t, c, base)
			if refRes.Outcome != recording.OutcomeOK || ref == "" {
				t.Fatalf("clean request: %v/%q %q", refRes.Outcome, refRes.Class, refRes.Err)
			}
			undo := inject(t, p, "resume", tt.params, 1)
			res, text := greedyAsk(t, c, base)
			switch tt.class {
			case recording.ClassNone:
				if res.Outcome != recording.OutcomeOK || text != ref || res.ContentChunks != refRes.ContentChunks || res.OutputTokens != refRes.OutputTokens {
					t.Errorf("resumed: %v/%q (%q), %d chunks, usage %d, answer equal to the reference %v (%q vs %q); want ok, %d chunks, the reference",
						res.Outcome, res.Class, res.Err, res.ContentChunks, res.OutputTokens, text == ref, text, ref, refRes.ContentChunks)
				}
			default:
				if res.Outcome != recording.OutcomeFailed || res.Class != tt.class {
					t.Errorf("resumed: %v/%q (%q), want failed/%q", res.Outcome, res.Class, res.Err, tt.class)
				}
				if want := ref[:8*len(ref)/refRes.ContentChunks] + ref[4*len(ref)/refRes.ContentChunks:]; text != want {
					t.Errorf("resumed answer %q, want the reference with tokens 4 to 7 twice %q", text, want)
				}
			}
			if n, err := p.Acted(context.Background(), "resume"); err != nil || n != 1 {
				t.Errorf("acted = %d, %v; want 1", n, err)
			}
			if err := undo(context.Background()); err != nil {
				t.Fatal(err)
			}
			res, text = greedyAsk(t, c, base)
			if res.Outcome != recording.OutcomeOK || text != ref {
				t.Errorf("after the revert: %v/%q (%q), answer equal to the reference %v", res.Outcome, res.Class, res.Err, text == ref)
			}
			if n := len(p.Toxics()); n != 0 {
				t.Errorf("after the revert %d toxics remain", n)
			}
		})
	}
}

// engineAsk sends n streamed chat requests (sequence numbers 0 to n-1, so
// each meets its own merging of events) through base with workers in
// parallel and returns their results and answers.
func engineAsk(c *client.Client, base string, n, workers int) ([]recording.Result, []string) {
	res, texts := make([]recording.Result, n), make([]string, n)
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				req := &workload.Request{Chat: true, Model: "m", Messages: []workload.Message{{Role: "user", Content: "hello"}}, MaxTokens: engineTokens, Stream: true}
				res[i].Seq = uint64(i)
				texts[i] = c.DoContent(context.Background(), base, req, &res[i])
			}
		})
	}
	wg.Wait()
	return res, texts
}

// engineWhole is the engine server's whole answer.
func engineWhole() string {
	var b strings.Builder
	for i := range engineTokens {
		b.WriteString("t" + strconv.Itoa(i))
	}
	return b.String()
}

// stream.resume in front of an engine that merges events into one chunk
// (at every alignment with the resume point), advertises keep-alive and
// closes after every stream: each request goes upstream twice, and the
// client gets the whole answer once (faithful) or with the resent span
// found as integrity_resume_repeat, on both load transports. Removed, the
// toxic leaves requests alone.
func TestStreamResumeMergingEngine(t *testing.T) {
	const n, workers = 20, 4
	whole := engineWhole()
	for _, tr := range loadTransports {
		for _, tt := range []struct {
			name   string
			params *ResumeParams
			class  recording.ErrorClass
			want   string
		}{
			{"faithful", &ResumeParams{AfterTokens: 6, Gap: 20 * time.Millisecond}, recording.ClassNone, whole},
			{"resend", &ResumeParams{AfterTokens: 8, Resend: 4, Gap: resendGap}, recording.ClassIntegrityResumeRepeat, "t0t1t2t3t4t5t6t7t4t5t6t7t8t9t10t11"},
		} {
			t.Run(string(tr)+"/"+tt.name, func(t *testing.T) {
				srv := startEngineServer(t, func(int) engineAct { return actStream })
				p := startProxy(t, srv.addr(), ModeHTTP)
				base := "http://" + p.Addr() + "/v1"
				c := loadClient(t, tr, client.Options{Concurrency: workers, IdleTimeout: 5 * time.Second})
				undo := inject(t, p, "resume", tt.params, 1)
				res, texts := engineAsk(c, base, n, workers)
				for i, r := range res {
					wantOutcome := recording.OutcomeOK
					if tt.class != recording.ClassNone {
						wantOutcome = recording.OutcomeFailed
					}
					if r.Outcome != wantOutcome || r.Class != tt.class || texts[i] != tt.want {
						t.Errorf("request %d: %v/%q (%q) answer %q; want %v/%q %q", i, r.Outcome, r.Class, r.Err, texts[i], wantOutcome, tt.class, tt.want)
					}
				}
				if got := srv.requests.Load(); got != 2*n {
					t.Errorf("the engine answered %d requests, want %d: each sent twice", got, 2*n)
				}
				if got, err := p.Acted(context.Background(), "resume"); err != nil || got != n {
					t.Errorf("acted = %d, %v; want %d", got, err, n)
				}
				if err := undo(context.Background()); err != nil {
					t.Fatal(err)
				}
				res, texts = engineAsk(c, base, n, workers)
				for i, r := range res {
					if r.Outcome != recording.OutcomeOK || texts[i] != whole {
						t.Errorf("after the revert, request %d: %v/%q (%q) answer %q", i, r.Outcome, r.Class, r.Err, texts[i])
					}
				}
				if got := srv.requests.Load(); got != 3*n {
					t.Errorf("after the revert the engine answered %d requests in all, want %d", got, 3*n)
				}
			})
		}
	}
}

// A resume whose fresh request the upstream refuses cuts the client's
// stream (a reset-free close in the middle of the body), as a router whose
// migration found no replica: the client sees the tokens delivered so far
// and a broken stream, never a stream that claims to be whole.
func TestStreamResumeRefused(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := startEngineServer(t, func(int) engineAct {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%2 == 0 {
			return act503
		}
		return actStream
	})
	p := startProxy(t, srv.addr(), ModeHTTP)
	c := loadClient(t, client.TransportNetHTTP, client.Options{Concurrency: 1})
	inject(t, p, "resume", &ResumeParams{AfterTokens: 4, Gap: time.Millisecond}, 1)
	res, texts := engineAsk(c, "http://"+p.Addr()+"/v1", 1, 1)
	if r := res[0]; r.Outcome != recording.OutcomeFailed || recording.IsIntegrity(r.Class) || r.ContentChunks != 4 || texts[0] != "t0t1t2t3" {
		t.Errorf("refused resume: %v/%q (%q), %d chunks %q; want a broken stream after 4 tokens", r.Outcome, r.Class, r.Err, r.ContentChunks, texts[0])
	}
}

func TestResumeParamsValidate(t *testing.T) {
	for _, tt := range []struct {
		p    ResumeParams
		want string
	}{
		{ResumeParams{AfterTokens: 4, Resend: 5}, "resend: 5, want 0 to after_tokens (4)"},
		{ResumeParams{AfterTokens: 4, Resend: -1}, "resend: -1"},
		{ResumeParams{AfterTokens: -2}, "after_tokens: -2, want 1 or more"},
		{ResumeParams{Gap: -time.Second}, "gap: -1s"},
		{ResumeParams{RequestMatch: RequestMatch{Probability: 2}}, "probability: 2"},
	} {
		err := tt.p.withDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error with %q", tt.p, err, tt.want)
		}
	}
	if err := (&ResumeParams{}).withDefaults().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
