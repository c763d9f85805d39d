package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestLoadOutStdout: `load --out -` writes the JSON report to standard
// output, alone (the start line, progress and summary go to stderr), and
// no file named "-"; `--out vllm=FILE` writes vLLM's bench serve result,
// and `report --format vllm` renders the saved run the same way.
func TestLoadOutStdout(t *testing.T) {
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	t.Chdir(dir)
	vllmPath := filepath.Join(dir, "result.json")
	code, stdout, stderr := run(t, loadArgs(url, "--requests", "20", "--rate", "40", "--out", "-", "--out", "vllm="+vllmPath)...)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Requests      struct {
			OK int64 `json:"ok"`
		} `json:"requests"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON report alone: %v\n%s", err, stdout)
	}
	if doc.SchemaVersion == 0 || doc.Requests.OK != 20 {
		t.Errorf("report on stdout: schema %d, %d ok, want 20 ok", doc.SchemaVersion, doc.Requests.OK)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`a file named "-" was written`)
	}
	var res map[string]any
	b, err := os.ReadFile(vllmPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("vllm result: %v\n%s", err, b)
	}
	for k, want := range map[string]any{"completed": 20.0, "num_prompts": 20.0, "model_id": "llmchaos-sim", "request_rate": 40.0, "total_output_tokens": 80.0} {
		if res[k] != want {
			t.Errorf("vllm result %s = %v, want %v", k, res[k], want)
		}
	}
	for _, k := range []string{"mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "std_e2el_ms", "request_throughput", "output_throughput", "total_token_throughput", "duration"} {
		if _, ok := res[k].(float64); !ok {
			t.Errorf("vllm result %s = %v, want a number", k, res[k])
		}
	}

	saved := filepath.Join(dir, "run.json")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "report", saved, "--format", "vllm")
	if code != exitcode.OK {
		t.Fatalf("report --format vllm: exit %d, stderr %q", code, errs)
	}
	var again map[string]any
	if err := json.Unmarshal([]byte(out), &again); err != nil {
		t.Fatalf("report --format vllm: %v\n%s", err, out)
	}
	for _, k := range []string{"completed", "num_prompts", "total_output_tokens", "model_id", "request_rate"} {
		if again[k] != res[k] {
			t.Errorf("report --format vllm %s = %v, load's --out vllm= wrote %v", k, again[k], res[k])
		}
	}
}

// TestLoadOutStdoutTwice: only one report can go to standard output.
func TestLoadOutStdoutTwice(t *testing.T) {
	t.Parallel()
	code, _, stderr := run(t, loadArgs("http://127.0.0.1:1/v1", "--requests", "1", "--rate", "1", "--out", "-", "--out", "vllm=-")...)
	if code != exitcode.Usage || !strings.Contains(stderr, "standard output") {
		t.Errorf("exit %d, stderr %q; want %d naming standard output", code, stderr, exitcode.Usage)
	}
}
