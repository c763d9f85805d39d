package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// `llmchaos schema` prints the committed schema; `llmchaos faults` lists
// the fault types and `llmchaos faults TYPE` details one; an unknown type
// is a usage error.
func TestFaultsAndSchemaCommands(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("..", "..", spec.SchemaPath))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		wantCode int
		check    func(out string) bool
	}{
		{[]string{"schema"}, exitcode.OK, func(out string) bool { return out == string(want) }},
		{[]string{"faults"}, exitcode.OK, func(out string) bool {
			return strings.Contains(out, "replica.kill") && strings.Contains(out, "instantaneous")
		}},
		{[]string{"faults", "network.latency"}, exitcode.OK, func(out string) bool {
			return strings.Contains(out, "jitter") && strings.Contains(out, "type: network.latency")
		}},
		{[]string{"faults", "network.latncy"}, exitcode.Usage, func(out string) bool { return out == "" }},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := execute(context.Background(), tt.args, &out, &errb); got != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", got, tt.wantCode, errb.String())
			}
			if !tt.check(out.String()) {
				t.Errorf("unexpected output:\n%s", out.String())
			}
		})
	}
}
