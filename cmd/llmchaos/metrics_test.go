package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update", false, "rewrite the generated metric reference in docs/metrics.md")

// TestReadmeMetricsMatchTable fails when docs/metrics.md's metric reference
// differs from `llmchaos metrics --format markdown`; -update rewrites it.
func TestReadmeMetricsMatchTable(t *testing.T) {
	t.Parallel()
	const path, begin, end = "../../docs/metrics.md", "<!-- metrics:begin -->\n", "<!-- metrics:end -->"
	var gen bytes.Buffer
	if err := writeMetrics(&gen, "markdown"); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/metrics.md: want the markers %q and %q", strings.TrimSpace(begin), end)
	}
	got, want := s[i+len(begin):j], gen.String()
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/metrics.md metric reference differs from the metric table; run go test ./cmd/llmchaos -run TestReadmeMetricsMatchTable -update\ngot:\n%s\nwant:\n%s", got, want)
}

func TestMetricsCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, want string }{
		{"text", "ttft"},
		{"markdown", "| `error_rate` | rate | ratio | `rate` |"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeMetrics(&out, tc.format); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to contain %q", got, tc.want)
			}
		})
	}
	if err := writeMetrics(&bytes.Buffer{}, "yaml"); err == nil {
		t.Error("format yaml: got no error, want one")
	}
}
