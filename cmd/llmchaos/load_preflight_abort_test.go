package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestLoadInterruptedDuringPreflight: Ctrl-C while the pre-flight check
// waits on a server that does not answer is an abort (98), as Ctrl-C
// during the load is, not an internal error (1).
func TestLoadInterruptedDuringPreflight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	code := execute(ctx, loadArgs(srv.URL+"/v1", "--rate", "5", "--requests", "2", "--progress", "0", "--no-scrape"), &out, &errb)
	if code != exitcode.Aborted || !strings.Contains(out.String()+errb.String(), "pre-flight") {
		t.Fatalf("exit %d, want %d with a pre-flight abort; output:\n%s%s", code, exitcode.Aborted, out.String(), errb.String())
	}
}
