package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestScriptOpenIsBounded: a script's open() of a device, or of a file over
// --max-open-size, fails in the init code with what and how to raise the
// bound, before anything is read into memory; a file within the bound is
// read; a --max-open-size that is not a size is a usage error.
func TestScriptOpenIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte(strings.Repeat("x", 2048)), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, target string) string {
		p := filepath.Join(dir, name)
		src := "const d = open(" + `"` + target + `"` + ");\nexport const options = { vus: 1, iterations: 1 };\nexport default function () {}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fileScript := write("file.js", "data.txt")
	devScript := write("dev.js", "/dev/zero")

	if code, _, errs := run(t, "run", fileScript, "--dry-run", "--max-open-size", "4KiB"); code != exitcode.OK {
		t.Errorf("a 2 KiB file under a 4 KiB bound: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs := run(t, "run", fileScript, "--dry-run", "--max-open-size", "1KiB")
	if code == exitcode.OK || !strings.Contains(errs, "2048 bytes is over open()'s limit of 1024 bytes (raise it with --max-open-size)") {
		t.Errorf("a 2 KiB file over a 1 KiB bound: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = run(t, "run", devScript, "--dry-run")
	if code == exitcode.OK || !strings.Contains(errs, "open /dev/zero: not a regular file") {
		t.Errorf("open of /dev/zero: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = run(t, "run", fileScript, "--dry-run", "--max-open-size", "lots")
	if code != exitcode.Usage || !strings.Contains(errs, `--max-open-size "lots": want a positive size`) {
		t.Errorf("--max-open-size lots: exit %d, stderr:\n%s", code, errs)
	}
}
