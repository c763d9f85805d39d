package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestUnboundedInputsAreUsageErrors: every input that would make llmchaos
// use memory without bound (a file nested 60,000 deep, a huge file, a
// device, a rate, a number of users or a cap past one process, a length
// past any context window) and every value the command would otherwise
// change without saying so (capacity --start 0, a start outside the
// bounds) is refused with exit 2 and a message that says what, within a
// fixed allocation budget.
func TestUnboundedInputsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deep := write("deep.yaml", append([]byte("apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: "), bytes.Repeat([]byte("["), 60_000)...))
	deepBlock := write("deep-block.yaml", []byte("apiVersion: llmchaos/v1\nkind: Experiment\nmetadata:\n  x: "+strings.Repeat("- ", 30_000)+"1\n"))
	huge := write("huge.yaml", append([]byte("apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: x, description: \""), bytes.Repeat([]byte("x"), 2<<20)...))
	share := experimentAt(t, dir, "share", "{rate: 50%, arrival: constant, duration: 30s, input_tokens: 16, output_tokens: 6}")
	bigCapacity := write("capacity.json", nil)
	if err := os.Truncate(bigCapacity, 17<<20); err != nil { // sparse: 17 MiB of zeros
		t.Fatal(err)
	}
	load := []string{"load", "--target", "http://127.0.0.1:9/v1", "--model", "m", "--duration", "1s", "--workload", "chat"}
	capa := []string{"capacity", "--target", "http://127.0.0.1:9/v1", "--model", "m", "--workload", "chat", "--slo", "ttft: p(99)<1s"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a file nested 60,000 deep", []string{"validate", deep}, deep + ":3:"},
		{"a file nested 30,000 deep in block style", []string{"validate", deepBlock}, "nesting deeper than 64 levels"},
		{"a file of 2 MiB", []string{"validate", huge}, "at most 1048576 (1 MiB)"},
		{"a device", []string{"validate", "/dev/zero"}, "/dev/zero"},
		{"a suite nested deep", []string{"suite", deep, "--dry-run"}, "nesting deeper than 64 levels"},
		{"a rate past one process", append(load, "--rate", "1e9"), "--rate 1e+09: at most 1e+06"},
		{"users past one process", append(load[:len(load):len(load)], "--concurrency", "10000000"), "--concurrency 10000000: at most 100000"},
		{"a cap past one process", append(load[:len(load):len(load)], "--rate", "5", "--max-in-flight", "10000000"), "--max-in-flight 10000000"},
		{"input tokens past any context", []string{"load", "--target", "http://127.0.0.1:9/v1", "--model", "m", "--duration", "1s", "--rate", "5",
			"--input-tokens", "1000000000"}, "more than 2097152 tokens"},
		{"output tokens past any context", []string{"load", "--target", "http://127.0.0.1:9/v1", "--model", "m", "--duration", "1s", "--rate", "5",
			"--input-tokens", "10", "--output-tokens", "uniform:1:999999999"}, "more than 2097152 tokens"},
		{"a capacity file that is a device", []string{"run", "--dry-run", "--capacity", "/dev/zero", share}, "/dev/zero is not a regular file"},
		{"a capacity file of 17 MiB", []string{"run", "--dry-run", "--capacity", bigCapacity, share},
			"capacity file: " + bigCapacity + " is bigger than a capacity file may be: at most 16777216 bytes"},
		{"capacity --max past one process", append(capa[:len(capa):len(capa)], "--max", "1e9"),
			"max 1e+09: at most 1e+06 requests per second in one process"},
		{"capacity --max users past one process", append(capa[:len(capa):len(capa)], "--mode", "concurrency", "--max", "1e7"),
			"max 1e+07: at most 100000 users in one process"},
		{"capacity --start 0", append(capa[:len(capa):len(capa)], "--start", "0"), "--start 0: want a load above 0"},
		{"capacity --start above --max", append(capa[:len(capa):len(capa)], "--start", "10", "--max", "1"), "start 10 is outside the load bounds [0.1, 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code, out, errs := run(t, tt.args...)
			runtime.ReadMemStats(&after)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, exitcode.Usage, trim(out), trim(errs))
			}
			if !strings.Contains(out+errs, tt.want) {
				t.Errorf("output lacks %q:\nstdout %s\nstderr %s", tt.want, trim(out), trim(errs))
			}
			// The file itself is up to 2 MiB; parsing must not take much more.
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("allocated %d MiB to refuse it", got>>20)
			}
		})
	}
}

// trim shortens long output for a failure message.
func trim(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
