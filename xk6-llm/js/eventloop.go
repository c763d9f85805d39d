package js

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/grafana/sobek"
)

// eventLoop is a VU's event loop, as k6's: a call (the init code, setup,
// an iteration, teardown, handleSummary) runs its function, then the
// callbacks that asynchronous work queued and the timers as they fall due,
// and ends only when nothing is queued, no registered callback is pending
// and no timer is set — or when its context ends. Promise jobs run inside
// each callback (sobek runs them when a call from Go returns).
//
// Everything but register's enqueue function runs on the VU's goroutine.
// A call's end (end) drops what it left: its timers, and callbacks that
// asynchronous work enqueues later, so that nothing an ended call
// started runs in the next one.
type eventLoop struct {
	rt      *sobek.Runtime
	mu      sync.Mutex
	queue   []func() error
	spare   []func() error // the other buffer of queue, reused
	pending int            // registered callbacks not enqueued yet
	gen     uint64         // the call in progress; a callback of another is dropped
	wake    chan struct{}

	// The VU's goroutine's alone.
	timers   []*loopTimer         // set and not due yet, by due time
	active   map[int64]*loopTimer // every timer not cleared nor over, by id
	nextID   int64
	clock    *time.Timer // reused for every wait on a timer
	rejected map[*sobek.Promise]struct{}
}

// loopTimer is one setTimeout or setInterval.
type loopTimer struct {
	id       int64
	due      time.Time
	every    time.Duration // setInterval's period (at least 1 ms)
	interval bool
	fn       sobek.Callable
	args     []sobek.Value
}

func newEventLoop(rt *sobek.Runtime) *eventLoop {
	l := &eventLoop{rt: rt, wake: make(chan struct{}, 1)}
	rt.SetPromiseRejectionTracker(func(p *sobek.Promise, op sobek.PromiseRejectionOperation) {
		if op == sobek.PromiseRejectionReject {
			if l.rejected == nil {
				l.rejected = map[*sobek.Promise]struct{}{}
			}
			l.rejected[p] = struct{}{}
		} else {
			delete(l.rejected, p)
		}
	})
	return l
}

// register tells the loop that asynchronous work will queue a callback:
// the call in progress waits for it. enqueue, safe from any goroutine,
// must be called exactly once; its callback runs on the VU's goroutine,
// unless the call ended meanwhile (then it is dropped). Modules start
// asynchronous work through VU.asyncWork, whose context ends with the
// call.
func (l *eventLoop) register() (enqueue func(func() error)) {
	l.mu.Lock()
	gen := l.gen
	l.pending++
	l.mu.Unlock()
	var once sync.Once
	return func(f func() error) {
		once.Do(func() {
			l.mu.Lock()
			if l.gen == gen {
				l.queue = append(l.queue, f)
				l.pending--
			}
			l.mu.Unlock()
			select {
			case l.wake <- struct{}{}:
			default:
			}
		})
	}
}

// run runs first, then the loop (drain).
func (l *eventLoop) run(ctx context.Context, first func() error) error {
	if err := first(); err != nil {
		return err
	}
	return l.drain(ctx)
}

// drain runs the loop once the call's function returned: the queued
// callbacks and the timers as they fall due, until nothing is left (nil),
// a callback returns an error or a promise was rejected without a handler
// (that error), or ctx ends (errIterationInterrupted). The call's function
// ran without the loop's help, so that a call that starts nothing costs no
// more than the function.
func (l *eventLoop) drain(ctx context.Context) error {
	for {
		for p := range l.rejected {
			return &promiseRejection{promise: p, value: p.Result()}
		}
		l.mu.Lock()
		queue := l.queue
		l.queue, l.spare = l.spare[:0], nil
		pending := l.pending
		l.mu.Unlock()
		if len(queue) == 0 {
			l.recycle(queue)
			if pending == 0 && len(l.timers) == 0 {
				return nil
			}
			if err := l.wait(ctx); err != nil {
				return err
			}
			continue
		}
		for i, f := range queue {
			if i > 0 && ctx.Err() != nil {
				return errIterationInterrupted
			}
			if err := f(); err != nil {
				return err
			}
		}
		l.recycle(queue)
	}
}

// recycle keeps a run queue's buffer for the next swap.
func (l *eventLoop) recycle(queue []func() error) {
	clear(queue)
	l.mu.Lock()
	if l.spare == nil {
		l.spare = queue[:0]
	}
	l.mu.Unlock()
}

// wait waits for a callback to be queued or the first timer to fall due
// (it is then queued), or for ctx's end.
func (l *eventLoop) wait(ctx context.Context) error {
	var due <-chan time.Time
	if len(l.timers) > 0 {
		d := time.Until(l.timers[0].due)
		if d <= 0 {
			l.fire()
			return nil
		}
		if l.clock == nil {
			l.clock = time.NewTimer(d)
		} else {
			l.clock.Reset(d)
		}
		due = l.clock.C
		defer l.clock.Stop()
	}
	select {
	case <-l.wake:
	case <-due:
		l.fire()
	case <-ctx.Done():
		return errIterationInterrupted
	}
	return nil
}

// fire queues the callbacks of the timers that are due, in order.
func (l *eventLoop) fire() {
	now := time.Now()
	n := 0
	for n < len(l.timers) && !l.timers[n].due.After(now) {
		n++
	}
	due := slices.Clone(l.timers[:n])
	l.timers = slices.Delete(l.timers, 0, n)
	l.mu.Lock()
	for _, t := range due {
		l.queue = append(l.queue, func() error { return l.runTimer(t) })
	}
	l.mu.Unlock()
}

// runTimer calls t's callback, unless it was cleared since it fell due,
// and sets an interval again.
func (l *eventLoop) runTimer(t *loopTimer) error {
	fn := t.fn
	if fn == nil { // cleared
		return nil
	}
	if !t.interval {
		delete(l.active, t.id)
	}
	_, err := fn(l.rt.GlobalObject(), t.args...) // this is globalThis, as in k6
	if t.interval && t.fn != nil && err == nil { // not cleared by its callback
		t.due = time.Now().Add(t.every)
		l.addTimer(t)
	}
	return err
}

// setTimer adds a timer that calls fn(args...) after delay milliseconds
// (repeatedly with interval) and returns its id.
func (l *eventLoop) setTimer(fn sobek.Callable, delay float64, args []sobek.Value, interval bool) int64 {
	l.nextID++
	d := time.Duration(max(delay, 0) * float64(time.Millisecond))
	t := &loopTimer{id: l.nextID, due: time.Now().Add(d), every: max(d, time.Millisecond), interval: interval, fn: fn, args: args}
	if l.active == nil {
		l.active = map[int64]*loopTimer{}
	}
	l.active[t.id] = t
	l.addTimer(t)
	return t.id
}

// addTimer inserts t in due order (after those due at the same time).
func (l *eventLoop) addTimer(t *loopTimer) {
	i, _ := slices.BinarySearchFunc(l.timers, t, func(a, b *loopTimer) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return -1 // equal times: after the others
	})
	l.timers = slices.Insert(l.timers, i, t)
}

// clearTimer cancels the timer id, also one that fell due and waits in
// the queue, or an interval whose callback is running; an unknown id is
// ignored, as in browsers.
func (l *eventLoop) clearTimer(id int64) {
	t, ok := l.active[id]
	if !ok {
		return
	}
	delete(l.active, id)
	t.fn = nil
	if i := slices.Index(l.timers, t); i >= 0 {
		l.timers = slices.Delete(l.timers, i, i+1)
	}
}

// end ends the call in progress: its timers are dropped and so is
// whatever its asynchronous work enqueues from now on.
func (l *eventLoop) end() {
	for _, t := range l.active {
		t.fn = nil
	}
	clear(l.active)
	clear(l.timers)
	l.timers = l.timers[:0]
	clear(l.rejected)
	l.mu.Lock()
	l.gen++
	clear(l.queue)
	l.queue = l.queue[:0]
	l.pending = 0
	l.mu.Unlock()
	select {
	case <-l.wake:
	default:
	}
}

// promiseRejection is a rejected promise that fails a call: the promise
// the call's function returned (own), or one rejected with no handler
// when a round of the call's loop ran out ("Uncaught (in promise)", as k6
// and browsers say).
type promiseRejection struct {
	promise *sobek.Promise
	value   sobek.Value
	own     bool
}

func (e *promiseRejection) Error() string {
	if e.own {
		return exceptionMessage(e.value)
	}
	return "Uncaught (in promise) " + exceptionMessage(e.value)
}
