package experiments

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/llmchaos/llmchaos/faults"
)

// injection is a fault that is injected and not yet reverted.
type injection struct {
	index int
	name  string
	typ   string
	undo  faults.Undo
	entry *faults.Entry
	seq   int // order of injection
}

// revert runs the fault's Undo; a panic in it is an error, not a crash, so
// that the other faults are still reverted.
func (in *injection) revert(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("undo panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return in.undo(ctx)
}

// ledger holds the run's injected faults, so that whoever reverts first
// (the fault's own goroutine at its time, or the runner when the run
// ends, is stopped or panics) reverts each exactly once. It is safe for
// concurrent use.
type ledger struct {
	mu     sync.Mutex
	active map[int]*injection
	seq    int
}

// add records an injected fault.
func (l *ledger) add(in *injection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	in.seq = l.seq
	l.active[in.index] = in
}

// take removes fault i and returns it; nil when it is not injected (never
// was, or already taken).
func (l *ledger) take(i int) *injection {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.active[i]
	delete(l.active, i)
	return in
}

// indexes returns the faults injected, last injected first.
func (l *ledger) indexes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ins := make([]*injection, 0, len(l.active))
	for _, in := range l.active {
		ins = append(ins, in)
	}
	slices.SortFunc(ins, func(a, b *injection) int { return b.seq - a.seq })
	out := make([]int, len(ins))
	for i, in := range ins {
		out[i] = in.index
	}
	return out
}
