package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// holdingServer holds every stream it is asked for open (after its first
// bytes) until the client goes away, and says so on held.
func holdingServer(t *testing.T) (url string, held <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	hold := func(w http.ResponseWriter, r *http.Request, contentType, first string) {
		w.Header().Set("Content-Type", contentType)
		if contentType == "text/plain" {
			w.Header().Set("Content-Length", "100")
		}
		fmt.Fprint(w, first)
		w.(http.Flusher).Flush()
		ch <- struct{}{}
		<-r.Context().Done()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/http", func(w http.ResponseWriter, r *http.Request) { hold(w, r, "text/plain", "the first bytes") })
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) { hold(w, r, "text/event-stream", "data: first\n\n") })
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		hold(w, r, "text/event-stream", `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Once"},"finish_reason":null}]}`+"\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

// holdScript opens one stream of the kind WHAT names, which the server
// holds open; what it records after the stream was recorded after the cut.
const holdScript = `import { check } from 'k6';
import { Counter } from 'k6/metrics';
import http from 'k6/http';
import sse from 'k6/x/sse';
import llm from 'k6/x/llm';
const before = new Counter('before');
const after = new Counter('after');
const client = new llm.Client({ baseURL: __ENV.URL + '/v1' });
export const options = { vus: 1, duration: '1m' };
export default function () {
  before.add(1);
  let r;
  switch (__ENV.WHAT) {
  case 'http': r = http.get(__ENV.URL + '/http'); break;
  case 'sse': r = sse.open(__ENV.URL + '/sse', () => {}); break;
  case 'llm': r = client.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 }); break;
  }
  check(r, { 'after the stall': () => true });
  after.add(1);
}
`

// TestRunScriptCtrlCCutsTheStreamAndRecordsNothingAfter: Ctrl-C (SIGINT to
// the real process's group, as a terminal sends it) while an iteration
// holds a stream ends the run with k6's exit code 105 and its report
// written, the iteration cut: no check, no sample after the stream, the
// iteration not counted.
func TestRunScriptCtrlCCutsTheStreamAndRecordsNothingAfter(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	for _, what := range []string{"http", "sse", "llm"} {
		t.Run(what, func(t *testing.T) {
			url, held := holdingServer(t)
			dir := t.TempDir()
			script := filepath.Join(dir, "hold.js")
			if err := os.WriteFile(script, []byte(holdScript), 0o644); err != nil {
				t.Fatal(err)
			}
			out := &syncBuffer{}
			cmd := exec.Command(bin, "run", script, "-e", "URL="+url, "-e", "WHAT="+what, "--out", dir, "--no-preflight")
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() {
				waitErr = cmd.Wait()
				close(exited)
			}()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			select {
			case <-held:
			case <-exited:
				t.Fatalf("llmchaos run exited (%v) before the server held its stream:\n%s", waitErr, out)
			case <-time.After(60 * time.Second):
				t.Fatalf("the server held no stream within 60 s:\n%s", out)
			}
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("llmchaos run did not exit within 60 s of SIGINT:\n%s", out)
			}
			ee, ok := errors.AsType[*exec.ExitError](waitErr)
			if !ok || ee.ExitCode() != exitcode.ScriptExternalAbort {
				t.Fatalf("exit %v, want %d (k6's external abort):\n%s", waitErr, exitcode.ScriptExternalAbort, out)
			}
			doc, err := report.Read(filepath.Join(dir, "run.json"))
			if err != nil {
				t.Fatalf("run.json: %v\n%s", err, out)
			}
			if doc.Verdict != report.VerdictAborted || doc.Abort == nil || doc.Abort.Name != "SIGINT" {
				t.Errorf("run.json: verdict %s, abort %+v; want aborted by SIGINT", doc.Verdict, doc.Abort)
			}
			sum := doc.Summary()
			count := func(name string) int64 {
				if s := sum.Custom(name, recording.TagFilter{}); s != nil {
					return s.Count
				}
				return 0
			}
			if count("before") != 1 {
				t.Errorf("before: got %d samples, want the one before the stream", count("before"))
			}
			for _, name := range []string{"after", js.MetricChecks, js.MetricIterations, js.MetricIterationDuration} {
				if got := count(name); got != 0 {
					t.Errorf("%s: got %d samples after the cut, want none", name, got)
				}
			}
			if what != "llm" && sum.Custom(js.MetricHTTPReqs, recording.TagFilter{}) != nil && count(js.MetricHTTPReqs) != 0 {
				t.Errorf("http_reqs: got %d samples of the cut stream, want none", count(js.MetricHTTPReqs))
			}
			if c := sum.Counts(recording.TagFilter{}); what == "llm" && (c.Scheduled() != 1 || c.OK != 0) {
				t.Errorf("llm request: got %d scheduled, %d ok; want the cut stream once, not as ok", c.Scheduled(), c.OK)
			}
		})
	}
}
