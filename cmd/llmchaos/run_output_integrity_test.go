package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// integrityExperiment is experiments/catalog/output-integrity.yaml's shape,
// short, against an engine in the test: replayed spans in a fault window,
// integrity clean before and after, found while on. %s is the engine's URL.
const integrityExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: integrity-short}
target:
  llm: {url: "%s/v1", model: m}
workload: {rate: 20, duration: 6s, input_tokens: 16, output_tokens: 24}
recovery: {window: 1s, hold: 1s}
faults:
  - {name: replays, type: stream.duplicate, at: 2s, duration: 2s, params: {probability: 0.5, after_tokens: 8, events: 4}}
thresholds:
  "integrity_error_rate{phase:baseline}": ["rate==0"]
  "integrity_error_rate{phase:recovery}": ["rate==0"]
  "integrity_error_rate{phase:fault,fault:replays}": ["rate>0"]
  requests_lost: ["count==0"]
`

// engineStream answers like vLLM (role chunk with the first token, one
// token per chunk, finish chunk, usage chunk, [DONE]); cutTail leaves
// [DONE] out, as a gateway that drops a stream's tail does.
func engineStream(cutTail bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := http.NewResponseController(w)
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%p\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", r, delta, finish)
			_ = fl.Flush()
		}
		chunk(`{"role":"assistant","content":" w0"}`, "null")
		for i := 1; i < 24; i++ {
			time.Sleep(3 * time.Millisecond)
			chunk(fmt.Sprintf(`{"content":" w%d"}`, i), "null")
		}
		chunk(`{}`, `"length"`)
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%p\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":24,\"total_tokens\":40}}\n\n", r)
		if !cutTail {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}
}

// The output-integrity experiment passes against a healthy engine (the
// corruption confined to its window), and fails naming the baseline
// threshold, with the class, against one whose streams lose [DONE].
func TestRunOutputIntegrity(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	runIt := func(cutTail bool) (int, string) {
		srv := httptest.NewServer(engineStream(cutTail))
		defer srv.Close()
		dir := t.TempDir()
		file := filepath.Join(dir, "integrity.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(integrityExperiment, "%s", srv.URL, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0")
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	if code, out := runIt(false); code != exitcode.OK {
		t.Fatalf("healthy engine: exit %d, want 0:\n%s", code, out)
	}
	code, out := runIt(true)
	if code != exitcode.Thresholds {
		t.Fatalf("engine that drops [DONE]: exit %d, want %d:\n%s", code, exitcode.Thresholds, out)
	}
	if !strings.Contains(out, "✗ integrity_error_rate{phase:baseline}") || !strings.Contains(out, "integrity_missing_done") {
		t.Errorf("the failure does not name the baseline threshold and the class:\n%s", out)
	}
}
