package faults

import (
	"context"
	"errors"
	"sync"
)

// ErrUndoIncomplete marks an Inject error after which part of the fault
// may still be applied: Inject failed part way, and undoing the parts it
// had applied failed too. The runner then keeps the fault's journal entry
// pending, so that the guard and `llmchaos recover` revert it, instead of
// closing it as a failed injection that changed nothing.
var ErrUndoIncomplete = errors.New("the parts already applied could not all be undone")

// JoinUndos returns one idempotent Undo that runs every non-nil undo, last
// first, and joins their errors; an undo that succeeded is not run again.
// It is safe for concurrent use.
func JoinUndos(undos []Undo) Undo {
	var mu sync.Mutex
	done := make([]bool, len(undos))
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			if undos[i] == nil || done[i] {
				continue
			}
			if err := undos[i](ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			done[i] = true
		}
		return errors.Join(errs...)
	}
}
