package replicastate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWriteThenRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	want := []Replica{
		{Index: 0, PID: 41, Port: 40123, GPU: 0, State: StateServing},
		{Index: 1, PID: 0, Port: 40177, GPU: 1, State: StateExited, Restarts: 2, LastExit: "signal: killed"},
	}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp"))
	if err != nil || len(left) > 0 {
		t.Errorf("temporary files left behind: %v (%v)", left, err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"index": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.json"), bad} {
		if rs, err := Read(path); err == nil {
			t.Errorf("Read(%s) = %+v, want an error", path, rs)
		}
	}
}
