package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestClientWaitForConnectionInTTFT: against a server that holds every
// connection (frozen, overloaded), a request that has to wait for one
// waits on the service, as its user would: the wait is in TTFT, not in
// send_lag.
func TestClientWaitForConnectionInTTFT(t *testing.T) {
	if testing.Short() {
		t.Skip("holds requests for real time")
	}
	const hold = 300 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release
		sseHeader(w)
		writeSSE(w, roleChunk, contentChunk("a"), finishChunk("stop"), "[DONE]")
	}))
	defer srv.Close()
	// Concurrency 1 allows 9 connections (see New): the tenth
	// request waits for one of them.
	c := newTestClient(t, Options{Concurrency: 1})
	const n = 10
	res := make([]recording.Result, n)
	start := c.Clock().Now()
	var wg sync.WaitGroup
	for i := range res {
		res[i].Scheduled = start
		wg.Go(func() { c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res[i]) })
	}
	time.AfterFunc(hold, func() { close(release) })
	wg.Wait()
	for i, r := range res {
		if r.Outcome != recording.OutcomeOK {
			t.Fatalf("request %d: %v %q, want ok", i, r.Outcome, r.Err)
		}
		// Generous for a loaded machine: the hold is 300 ms.
		if lag := r.SendLag(); lag > 100*time.Millisecond {
			t.Errorf("request %d: send_lag %v, want the wait for the server out of it", i, lag)
		}
		if ttft, _ := r.TTFT(); ttft < hold-10*time.Millisecond {
			t.Errorf("request %d: ttft %v, want the %v the server held it", i, ttft, hold)
		}
	}
}
