package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", path, diffLine(got, want))
	}
}

func TestWriteTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, judgedRun(t, false)); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.golden.txt", b.Bytes())
}

func TestWriteTextContent(t *testing.T) {
	var b bytes.Buffer
	d := judgedRun(t, false)
	if err := WriteText(&b, d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"✓ ttft               p(99)<500ms  330.239ms",
		"✗ ttft               p(50)<200ms  220.031ms",
		"✗ error_rate         rate<0.01    0.125",
		"✗ ttft{phase:recovery}  p(99)<1s     no data",
		"verdict: FAIL (3 of 5 thresholds failed)",
		"by class: reset 1, http_4xx 1, http_429 1, cancelled 1",
		"goodput          2.50/s  ttft ≤ 200ms, tpot ≤ 70ms",
	} {
		if !strings.Contains(out, strings.Join(strings.Fields(want), " ")) && !strings.Contains(squeeze(out), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// The latency table's columns line up: every row of it has the same
	// width, counted in runes.
	lines := strings.Split(out, "\n")
	var width int
	for _, l := range lines {
		if strings.HasPrefix(l, "  ttft ") || strings.HasPrefix(l, "  e2e ") || strings.HasPrefix(l, "latency") {
			if width == 0 {
				width = len([]rune(l))
			} else if len([]rune(l)) != width {
				t.Errorf("row %q is %d wide, want %d", l, len([]rune(l)), width)
			}
		}
	}

	b.Reset()
	if err := WriteText(&b, judgedRun(t, true)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "verdict: ABORTED by a stop condition (3 of 5 thresholds failed)") {
		t.Errorf("aborted run's verdict line missing:\n%s", b.String())
	}
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteText(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nverdict: no thresholds — no verdict\n") {
		t.Errorf("run without thresholds ends %q", b.String()[max(0, b.Len()-60):])
	}
}

// squeeze collapses runs of spaces, so that expectations do not depend on
// column widths.
func squeeze(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

func TestFormatters(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{fmtMs(0), "0ms"}, {fmtMs(0.0115), "12µs"}, {fmtMs(2.345), "2.35ms"}, {fmtMs(217.27), "217.3ms"},
		{fmtMs(1234), "1.23s"}, {fmtMs(123456), "123.46s"},
		{fmtRate(0), "0/s"}, {fmtRate(2.5), "2.50/s"}, {fmtRate(55.7), "55.7/s"}, {fmtRate(557), "557/s"},
		{fmtTokens(4), "4"}, {fmtTokens(111.4), "111.4"},
		{fmtPercent(0.125), "12.50%"}, {fmtSeconds(4), "4.00s"}, {fmtSeconds(90.5), "90.50s"},
		{fmtSigned(-0.04, 1), "0.0"}, {fmtSigned(3.25, 1), "+3.2"}, {fmtSigned(-3.25, 1), "-3.2"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
