package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestFormatsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats() {
		if f.Name == "" || f.Description == "" || f.Write == nil {
			t.Errorf("format %+v: want a name, a description and a writer", f)
		}
		if seen[f.Name] {
			t.Errorf("format %q listed twice", f.Name)
		}
		seen[f.Name] = true
		got, err := LookupFormat(f.Name)
		if err != nil || got.Name != f.Name {
			t.Errorf("LookupFormat(%q) = %q, %v", f.Name, got.Name, err)
		}
	}
	for _, name := range []string{FormatText, FormatJSON, FormatJUnit, FormatHTML, FormatVLLM} {
		if !seen[name] {
			t.Errorf("format %q missing from Formats()", name)
		}
	}
	if _, err := LookupFormat("csv"); err == nil || !strings.Contains(err.Error(), FormatNames()) {
		t.Errorf("LookupFormat(csv) error = %v, want one listing %s", err, FormatNames())
	}
	if got, want := FormatNames(), "text, json, junit, html or vllm"; got != want {
		t.Errorf("FormatNames() = %q, want %q", got, want)
	}
}

// TestWriteOutputStdout: "" and "-" mean standard output, a path a file
// written whole; a failing output names its flag and does not keep the
// others from being written.
func TestWriteOutputStdout(t *testing.T) {
	d := synthRun(t, 1, 1, 200, recording.Tags{})
	dir := t.TempDir()
	file := filepath.Join(dir, "run.vllm.json")
	var stdout bytes.Buffer
	err := WriteOutputs(&stdout, []Output{
		{Format: FormatJSON, Path: Stdout},
		{Format: FormatJUnit, Path: filepath.Join(dir, "missing", "j.xml"), Flag: "--junit"},
		{Format: FormatVLLM, Path: file},
	}, d)
	if err == nil || !strings.HasPrefix(err.Error(), "--junit: ") {
		t.Errorf("error = %v, want the --junit output's", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	if _, ok := doc["schema_version"]; !ok {
		t.Errorf("stdout has no schema_version: %s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, Stdout)); err == nil {
		t.Errorf("a file named %q was written", Stdout)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the vllm output after a failed one was not written: %v", err)
	}
}
