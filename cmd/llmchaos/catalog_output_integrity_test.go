package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// catalogIntegrity is the catalog's output-integrity experiment.
const catalogIntegrity = "../../experiments/catalog/output-integrity.yaml"

// catalogTimeScale shortens it for make test (80 s of load → 40 s) through
// llmchaos suite's --time-scale: the faults' windows, the load and the
// recovery windows scale together, the thresholds stay as written.
const catalogTimeScale = "0.5"

// runCatalog runs the experiment file through `llmchaos suite
// --time-scale` and returns the exit code, the output and the
// experiment's run.json.
func runCatalog(t *testing.T, bin, file string) (int, string, *report.Document) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "suite", file, "--time-scale", catalogTimeScale, "--out", filepath.Join(dir, "suite"),
		"--no-history", "--progress", "0")
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
	doc, err := report.Read(filepath.Join(dir, "suite", "01-output-integrity", "run.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return code, out.String(), doc
}

// thresholdOK returns whether run.json records threshold key (as the
// verdict names it) held, and whether it records it at all.
func thresholdOK(doc *report.Document, key string) (ok, found bool) {
	for _, th := range doc.Thresholds {
		if th.Key() == key {
			return th.OK, true
		}
	}
	return false, false
}

// experiments/catalog/output-integrity.yaml, at half its length, passes
// against the clean simulator it names (every corruption it injects
// found in its window, a killed replica's streams migrated cleanly,
// nothing before or after), and fails, naming the kill window's
// thresholds, when the streams of that window are migrated by a router
// that resends 4 tokens the client already had (a stream.resume with
// resend in the kill's place): the integrity checks fail those streams and
// the probes' answers change.
func TestCatalogOutputIntegrity(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	src, err := os.ReadFile(catalogIntegrity)
	if err != nil {
		t.Fatal(err)
	}
	const kill = "{name: kill, type: replica.kill, at: 35s, duration: 5s}"
	if !bytes.Contains(src, []byte(kill)) {
		t.Fatalf("%s has no %s: the test's corruption must be brought up to date", catalogIntegrity, kill)
	}
	clean := []string{
		"integrity_error_rate{phase:baseline}", "integrity_error_rate{phase:recovery}",
		"integrity_error_rate{phase:fault,fault:replays}", "integrity_error_rate{phase:fault,fault:splices}",
		"output_consistency{phase:baseline}", "output_consistency{phase:fault,fault:replays}", "output_consistency{phase:recovery}",
		"requests_lost",
	}
	corrupted := []string{"output_consistency{phase:fault,fault:kill}", "error_rate{phase:fault,fault:kill}"}
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		abs, err := filepath.Abs(catalogIntegrity)
		if err != nil {
			t.Fatal(err)
		}
		code, out, doc := runCatalog(t, bin, abs)
		if code != exitcode.OK {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		for _, key := range append(clean, corrupted...) {
			if ok, found := thresholdOK(doc, key); !ok || !found {
				t.Errorf("run.json: %s held %v (recorded %v), want held", key, ok, found)
			}
		}
		if f := doc.Faults; len(f) != 3 || f[1].Name != "kill" || f[1].InjectedAtS == nil || !f[1].RevertOK {
			t.Errorf("faults %+v: want the kill injected and reverted", f)
		}
	})
	t.Run("resent on migration", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "output-integrity.yaml")
		corrupt := bytes.Replace(src, []byte(kill),
			[]byte("{name: kill, type: stream.resume, at: 35s, duration: 5s, params: {after_tokens: 8, resend: 4, gap: 300ms}}"), 1)
		if err := os.WriteFile(file, corrupt, 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, doc := runCatalog(t, bin, file)
		if code != exitcode.Thresholds {
			t.Fatalf("exit %d, want %d:\n%s", code, exitcode.Thresholds, out)
		}
		for _, key := range corrupted {
			if !strings.Contains(out, "✗ "+key) {
				t.Errorf("the verdict does not name %s as failed:\n%s", key, out)
			}
			if ok, found := thresholdOK(doc, key); ok || !found {
				t.Errorf("run.json: %s held %v (recorded %v), want failed", key, ok, found)
			}
		}
		for _, key := range clean {
			if ok, found := thresholdOK(doc, key); !ok || !found {
				t.Errorf("run.json: %s held %v (recorded %v), want held: the corruption is the kill window's alone", key, ok, found)
			}
		}
		if !strings.Contains(out, "integrity_resume_repeat") {
			t.Errorf("the report does not name integrity_resume_repeat:\n%s", out)
		}
	})
}
