package experiments

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// halfFault fails Inject part way and cannot undo what it applied: the
// error carries faults.ErrUndoIncomplete, as the families' all-or-nothing
// Injects say when their rollback fails.
type halfFault struct{}

func (halfFault) Inject(_ context.Context, log faults.RevertLog) (faults.Undo, error) {
	return nil, fmt.Errorf("second part: boom; undo the first: %w: %w", faults.ErrUndoIncomplete, errors.New("proxy gone"))
}

// An Inject that leaves part of its fault applied is a revert that failed:
// the run says so (RevertError, exit 97) and the fault's journal entry
// stays pending for the guard and `llmchaos recover`, instead of being
// closed as a failed injection that changed nothing.
func TestInjectWithIncompleteUndoStaysPending(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	exp := testSpec(srv.URL, 1500*time.Millisecond, httpErrorFault("half", 300*time.Millisecond, 300*time.Millisecond))
	dir := t.TempDir()
	_, err := runSpec(context.Background(), exp, Options{RunDir: dir, hooks: fakeBuilds(map[string]faults.Fault{"half": halfFault{}})})
	if _, ok := errors.AsType[*RevertError](err); !ok {
		t.Errorf("Run error = %v, want a RevertError", err)
	}
	pending, perr := faults.Pending(dir)
	if perr != nil {
		t.Fatal(perr)
	}
	if len(pending) != 1 || pending[0].Name != "half" {
		t.Errorf("pending journal entries = %+v, want the fault half", pending)
	}
}
