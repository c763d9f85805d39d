package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a run that writes a journal and
// waits to be killed (see TestMain).
const helperEnv = "LLMCHAOS_FAULTS_TEST_JOURNAL_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := crashingRun(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fileSpec is the revert spec of a test change: the file at Path exists.
type fileSpec struct {
	Path string `json:"path"`
}

const kindFile = "test.file"

// createFile is a test fault's change: it records how to revert it, then
// creates the file, as a real fault records before it changes anything.
func createFile(log RevertLog, path string) error {
	data, err := json.Marshal(fileSpec{Path: path})
	if err != nil {
		return err
	}
	if err := log.Will(RevertSpec{Kind: kindFile, Data: data}); err != nil {
		return err
	}
	return os.WriteFile(path, nil, 0o644)
}

// crashingRun is the helper process: faults f1 and f2 are injected (two
// changes each), f3 is injected and reverted, f4 dies in the middle of its
// Inject. It then says "ready" and blocks until it is killed.
func crashingRun(dir string) error {
	j, err := Open(dir)
	if err != nil {
		return err
	}
	for _, name := range []string{"f1", "f2", "f3", "f4"} {
		e, err := j.Begin(name, "test.file", "dir "+dir)
		if err != nil {
			return err
		}
		if err := createFile(e, filepath.Join(dir, name+"-a")); err != nil {
			return err
		}
		if name == "f4" {
			break // killed before the second change and before Injected
		}
		if err := createFile(e, filepath.Join(dir, name+"-b")); err != nil {
			return err
		}
		if err := e.Injected(); err != nil {
			return err
		}
		if name == "f3" {
			for _, s := range []string{"-b", "-a"} {
				if err := os.Remove(filepath.Join(dir, name+s)); err != nil {
					return err
				}
			}
			if err := e.Reverted(nil); err != nil {
				return err
			}
		}
	}
	fmt.Println("ready")
	_, err = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return err
}

// fileReverter removes the spec's file and records the order of calls. It is
// idempotent: a file already gone counts as reverted.
type fileReverter struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]error // base name → error to return
}

func (r *fileReverter) revert(_ context.Context, data json.RawMessage) error {
	var s fileSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	r.mu.Lock()
	r.calls = append(r.calls, filepath.Base(s.Path))
	err := r.fail[filepath.Base(s.Path)]
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (r *fileReverter) reverters() map[string]Reverter {
	return map[string]Reverter{kindFile: r.revert}
}

func TestRecoverAfterKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q, %v; want ready", line, err)
	}
	// The journal is locked while the run lives.
	if _, err := Recover(context.Background(), dir, nil); !errors.Is(err, ErrJournalBusy) {
		t.Errorf("Recover during the run: got %v, want ErrJournalBusy", err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()

	pend, err := Pending(dir)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	var names []string
	for _, p := range pend {
		names = append(names, fmt.Sprintf("%s:%d", p.Name, len(p.Specs)))
	}
	if got, want := strings.Join(names, " "), "f1:2 f2:2 f4:1"; got != want {
		t.Errorf("pending: got %s, want %s", got, want)
	}
	if len(pend) == 3 {
		if pend[0].InjectedAt.IsZero() || !pend[2].InjectedAt.IsZero() {
			t.Errorf("injected at: f1 %v (want set), f4 %v (want zero)", pend[0].InjectedAt, pend[2].InjectedAt)
		}
		if pend[0].PID != cmd.Process.Pid || pend[0].Target != "dir "+dir || pend[0].Type != "test.file" {
			t.Errorf("f1 intent: got pid %d target %q type %q", pend[0].PID, pend[0].Target, pend[0].Type)
		}
	}

	rev := &fileReverter{}
	rep, err := Recover(context.Background(), dir, rev.reverters())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	// Last begun first; within a fault, last change first.
	if got, want := strings.Join(rev.calls, " "), "f4-a f2-b f2-a f1-b f1-a"; got != want {
		t.Errorf("revert order: got %s, want %s", got, want)
	}
	if got, want := len(rep.Faults), 3; got != want {
		t.Errorf("report: got %d faults, want %d", got, want)
	}
	if f := rep.Failed(); len(f) != 0 {
		t.Errorf("report: %d failed, want none", len(f))
	}
	left, err := filepath.Glob(filepath.Join(dir, "f*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("changes left after Recover: %v", left)
	}
	if pend, err := Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("pending after Recover: %d, %v; want none", len(pend), err)
	}

	// A second Recover replays nothing.
	rev.calls = nil
	rep, err = Recover(context.Background(), dir, rev.reverters())
	if err != nil || len(rep.Faults) != 0 || len(rev.calls) != 0 {
		t.Errorf("second Recover: %d faults, calls %v, err %v; want nothing", len(rep.Faults), rev.calls, err)
	}
}

func TestRecoverJoinsFailuresAndRetries(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := j.Begin("one", "test.file", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := createFile(e1, filepath.Join(dir, "one")); err != nil {
		t.Fatal(err)
	}
	e2, err := j.Begin("two", "test.unknown", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Will(RevertSpec{Kind: "test.unknown", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := createFile(e2, filepath.Join(dir, "two")); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("boom")
	rev := &fileReverter{fail: map[string]error{"one": boom}}
	rep, err := Recover(context.Background(), dir, rev.reverters())
	if !errors.Is(err, boom) {
		t.Errorf("Recover: got %v, want it to wrap the reverter's error", err)
	}
	if err == nil || !strings.Contains(err.Error(), `no reverter for revert spec kind "test.unknown"`) {
		t.Errorf("Recover: got %v, want the unknown kind reported too", err)
	}
	// The known spec of "two" was still reverted despite the unknown one.
	if _, err := os.Stat(filepath.Join(dir, "two")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file two: got %v, want it removed", err)
	}
	if got, want := len(rep.Failed()), 2; got != want {
		t.Errorf("failed faults: got %d, want %d", got, want)
	}
	pend, err := Pending(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 2 || !strings.Contains(pend[0].LastError, "boom") {
		t.Fatalf("pending after failed Recover: got %+v, want both with the last error", pend)
	}

	// Fixed: a new Recover (idempotent reverters) closes both.
	rev = &fileReverter{}
	revs := rev.reverters()
	revs["test.unknown"] = func(context.Context, json.RawMessage) error { return nil }
	if _, err := Recover(context.Background(), dir, revs); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	if got, want := strings.Join(rev.calls, " "), "two one"; got != want {
		t.Errorf("second Recover calls: got %s, want %s", got, want)
	}
	if pend, _ := Pending(dir); len(pend) != 0 {
		t.Errorf("pending after second Recover: %d, want 0", len(pend))
	}
}

func TestJournalTornLastLine(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := j.Begin("one", "test.file", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := createFile(e, filepath.Join(dir, "one")); err != nil {
		t.Fatal(err)
	}
	if err := e.Injected(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, JournalFile)
	// A crash in the middle of writing the "reverted" record.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"op":"reverted","fault":1,"ti`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	pend, err := Pending(dir)
	if err != nil {
		t.Fatalf("Pending with a torn last line: %v", err)
	}
	if len(pend) != 1 || pend[0].Name != "one" || len(pend[0].Specs) != 1 {
		t.Fatalf("pending: got %+v, want fault one with its spec", pend)
	}

	// Reopening cuts the torn tail; new records start on their own line.
	j, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := j.Begin("two", "test.file", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e2.ID(), 2; got != want {
		t.Errorf("id after reopen: got %d, want %d", got, want)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"ti{`) || strings.Count(string(b), "\n") != 4 {
		t.Errorf("journal after reopen:\n%s\nwant 4 whole lines", b)
	}
	pend, err = Pending(dir)
	if err != nil || len(pend) != 2 {
		t.Errorf("pending after reopen: %d, %v; want 2, nil", len(pend), err)
	}
}

func TestJournalMalformedMiddleLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lines := []string{
		`{"op":"intent","fault":1,"time":"` + now + `","name":"one"}`,
		`garbage`,
		`{"op":"will","fault":1,"time":"` + now + `","spec":{"kind":"test.file","data":{"path":"x"}}}`,
		`{"op":"will","fault":7,"time":"` + now + `","spec":{"kind":"test.file","data":{}}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pend, err := Pending(dir)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("Pending: got %v, want errors for lines 2 and 4", err)
	}
	if len(pend) != 1 || len(pend[0].Specs) != 1 {
		t.Errorf("pending: got %+v, want fault one with one spec despite the bad lines", pend)
	}
}

func TestJournalEntryRules(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := Open(dir); !errors.Is(err, ErrJournalBusy) {
		t.Errorf("second Open: got %v, want ErrJournalBusy", err)
	}
	tests := []struct {
		name    string
		close   func(*Entry) error
		pending bool
	}{
		{"reverted ok closes", func(e *Entry) error { return e.Reverted(nil) }, false},
		{"revert failure stays pending", func(e *Entry) error { return e.Reverted(errors.New("x")) }, true},
		{"failed inject closes", func(e *Entry) error { return e.Failed(errors.New("no")) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := j.Begin(tt.name, "t", "")
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.close(e); err != nil {
				t.Fatal(err)
			}
			pend, err := j.Pending()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range pend {
				found = found || p.ID == e.ID()
			}
			if found != tt.pending {
				t.Errorf("pending: got %v, want %v", found, tt.pending)
			}
			err = e.Will(RevertSpec{Kind: "k", Data: json.RawMessage(`{}`)})
			if got := err != nil; got == tt.pending {
				t.Errorf("Will after close: got %v, want error %v", err, !tt.pending)
			}
		})
	}
	e, err := j.Begin("bad spec", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Will(RevertSpec{Data: json.RawMessage(`{}`)}); err == nil {
		t.Error("Will without kind: got nil, want error")
	}
	if err := e.Will(RevertSpec{Kind: "k", Data: json.RawMessage(`{`)}); err == nil {
		t.Error("Will with bad JSON: got nil, want error")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin("late", "t", ""); !errors.Is(err, ErrJournalClosed) {
		t.Errorf("Begin after Close: got %v, want ErrJournalClosed", err)
	}
}

func TestPendingWithoutJournal(t *testing.T) {
	pend, err := Pending(t.TempDir())
	if err != nil || len(pend) != 0 {
		t.Errorf("Pending: got %v, %v; want nothing", pend, err)
	}
	rep, err := Recover(context.Background(), t.TempDir(), nil)
	if err != nil || len(rep.Faults) != 0 {
		t.Errorf("Recover: got %v, %v; want nothing", rep, err)
	}
}
