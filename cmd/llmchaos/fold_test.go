package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// checkWidth fails t for each line of out (what a command printed) wider
// than maxWidth columns, ANSI colours left out.
//
// A path the test chose (a temporary directory, whose length is the
// system's) counts as the four columns of "/DIR": a line that names a file
// fits but for the length of the path it must print whole.
func checkWidth(t *testing.T, what, out string, paths ...string) {
	t.Helper()
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	for i, line := range strings.Split(out, "\n") {
		measured := ansi.ReplaceAllString(line, "")
		for _, p := range paths {
			measured = strings.ReplaceAll(measured, p, "/DIR")
		}
		if n := utf8.RuneCountInString(measured); n > maxWidth {
			t.Errorf("%s: line %d is %d columns wide, want at most %d:\n%s", what, i+1, n, maxWidth, line)
		}
	}
}

// checkUnits fails t for a duration of a second or more printed in
// milliseconds ("24991.607ms"): one unit style, "24.99s".
func checkUnits(t *testing.T, what, out string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`\b\d{4,}(\.\d+)?ms\b`).FindAllString(out, -1) {
		t.Errorf("%s: %s printed in ms, want seconds (24.99s)", what, m)
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	long := "llmchaos run: warning: " + strings.Repeat("word ", 40) + "end"
	var b bytes.Buffer
	f := newFoldWriter(&b, 60)
	for _, part := range []string{long[:30], long[30:] + "\nshort\n", strings.Repeat("x", 130), "\n", "tail"} {
		if _, err := f.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if utf8.RuneCountInString(l) > 60 {
			t.Errorf("line %d is %d wide: %q", i, utf8.RuneCountInString(l), l)
		}
		if i > 0 && strings.HasPrefix(lines[i-1], "llmchaos") && l != "" && !strings.HasPrefix(l, "  ") && l != "short" {
			t.Errorf("continuation %q is not indented", l)
		}
	}
	joined := strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
	if want := strings.Join(strings.Fields(long), " ") + " short " + strings.Repeat("x", 130) + " tail"; strings.ReplaceAll(joined, "x x", "xx") != want {
		t.Errorf("folding lost or changed words:\n%s", b.String())
	}
	if !strings.HasSuffix(b.String(), "tail") {
		t.Errorf("the partial line was not flushed: %q", b.String())
	}
	colored := "\x1b[32m" + strings.Repeat("y ", 50) + "\x1b[0m"
	if got := fold(colored, 60); got != colored+"\n" {
		t.Errorf("a coloured line was folded: %q", got)
	}
}

// A plain load's stderr fits in maxWidth columns with -v, its summary
// names the command in its header and prints its times in one unit style,
// and under --quiet stdout is the verdict line alone.
func TestLoadOutputWidth(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	code, stdout, stderr := run(t, loadArgs(url, "--requests", "60", "--rate", "60", "-v", "--threshold", "ttft: p(99)<5s",
		"--threshold", "e2e{endpoint:"+url+"}: p(99)<5s")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	checkWidth(t, "load -v stderr", stderr)
	checkWidth(t, "load -v stdout", stdout)
	checkUnits(t, "load -v", stdout)
	if !strings.Contains(stdout, "\nllmchaos load") || strings.Contains(stdout, "llmchaos run") {
		t.Errorf("load's summary header does not name load:\n%s", stdout)
	}
	code, stdout, stderr = run(t, loadArgs(url, "--requests", "20", "--rate", "60", "--quiet", "--threshold", "ttft: p(99)<5s")...)
	if code != exitcode.OK || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "verdict: PASS") || stderr != "" {
		t.Errorf("load --quiet: exit %d, want the verdict line alone on stdout and nothing on stderr:\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// The real process folds stderr lines wider than maxWidth (here a usage
// error that quotes a long value).
func TestStderrFolded(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	missing := t.TempDir() + "/" + strings.Repeat("a-long-directory-name/", 8) + "experiment.yaml"
	cmd := exec.Command(bin, "run", missing)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := processExit(t, err); code != exitcode.Usage {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr.String())
	}
	if !strings.Contains(strings.Join(strings.Fields(stderr.String()), ""), "experiment.yaml") {
		t.Fatalf("stderr does not name the file:\n%s", stderr.String())
	}
	checkWidth(t, "stderr", stderr.String())
}
