package sim

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Live drives an Engine on the wall clock: one goroutine (Run) advances it
// to each next event, and any goroutine may submit, cancel and inject faults
// through Live's methods, which serialise access with a mutex. Engine time 0
// is the moment NewLive was called.
//
// Run also delivers progress to streams with a sink (Stream.SetSink): after
// each Advance it takes the streams that published (Engine.TakePublished),
// releases the mutex and calls their sinks in order, so that one wake-up of
// Run hands every stream's new tokens to its consumer. Progress published
// by another method (Submit catching up a late step, Cancel, Crash) waits
// for Run's next pass, which that method's poke starts at once.
type Live struct {
	mu      sync.Mutex
	eng     *Engine
	start   time.Time
	kick    chan struct{}
	deliver []*Stream // Run's own: the streams to deliver after an Advance
}

// NewLive wraps e, which must not be used directly afterwards.
func NewLive(e *Engine) *Live {
	return &Live{eng: e, start: time.Now(), kick: make(chan struct{}, 1)}
}

// now returns engine time; call it with l.mu held so that engine time is
// monotonic across callers.
func (l *Live) now() time.Duration { return time.Since(l.start) }

// Now returns the current engine time, for Request.Arrival.
func (l *Live) Now() time.Duration { return time.Since(l.start) }

// poke wakes Run so it re-reads the next event time.
func (l *Live) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run advances the engine until ctx ends (it returns nil) or the engine dies
// (it returns the cause, an *OOMError, once the streams' sinks were told).
// Exactly one Run may be active.
func (l *Live) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.mu.Lock()
		next, ok := l.eng.Advance(l.now())
		dead := l.eng.Err()
		l.deliver = l.eng.TakePublished(l.deliver[:0])
		l.mu.Unlock()
		deliverAll(l.deliver)
		if dead != nil {
			return dead
		}
		wait := time.Hour
		if ok {
			wait = next - l.Now() // after the deliveries, which took time
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-l.kick:
		case <-timer.C:
		}
	}
}

// Submit queues req now; see Engine.Submit.
func (l *Live) Submit(req Request) (*Stream, error) {
	l.mu.Lock()
	s, err := l.eng.Submit(l.now(), req)
	l.mu.Unlock()
	l.poke()
	return s, err
}

// Cancel ends s now and frees its KV blocks; see Engine.Cancel.
func (l *Live) Cancel(s *Stream) {
	l.mu.Lock()
	l.eng.Cancel(l.now(), s)
	l.mu.Unlock()
	l.poke()
}

// SetSlowdown sets the slowdown factor; see Engine.SetSlowdown.
func (l *Live) SetSlowdown(factor float64) error {
	l.mu.Lock()
	err := l.eng.SetSlowdown(l.now(), factor)
	l.mu.Unlock()
	l.poke()
	return err
}

// Hang stops token production for d from now; see Engine.Hang.
func (l *Live) Hang(d time.Duration) {
	l.mu.Lock()
	l.eng.Hang(l.now(), d)
	l.mu.Unlock()
	l.poke()
}

// Crash kills the engine now as an out-of-memory would; Run returns.
func (l *Live) Crash() {
	l.mu.Lock()
	l.eng.Crash(l.now())
	l.mu.Unlock()
	l.poke()
}

// Stats returns a snapshot of the engine's state.
func (l *Live) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.eng.Stats()
	st.Now = max(st.Now, l.now())
	return st
}

// Err returns why the engine died, or nil.
func (l *Live) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eng.Err()
}

// Close releases the engine's GPU memory; call it after Run has returned.
func (l *Live) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eng.Close()
}

// deliverPerWorker is the fewest sinks a delivery goroutine is started for.
// Spreading costs CPU (BenchmarkThroughput: about 9.4 CPU-s per million
// tokens spread from 32 sinks up, 8.5 without), so only a batch that takes
// one goroutine a few milliseconds to write (a step of hundreds of
// sequences, or a Run that fell behind) is spread.
const deliverPerWorker = 256

// deliverAll calls each stream's sink and clears d. A large batch (one step
// of many sequences) is spread over up to GOMAXPROCS goroutines, the
// calling one among them, and deliverAll returns when all are done: each
// sink makes a write(2), and one goroutine alone would cap a simulator's
// token rate at what one core can write. Sinks of different streams are
// independent, and a stream appears once per batch.
func deliverAll(d []*Stream) {
	workers := min(runtime.GOMAXPROCS(0), len(d)/deliverPerWorker)
	if workers <= 1 {
		for i, s := range d {
			s.deliver()
			d[i] = nil
		}
		return
	}
	per := (len(d) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := per; lo < len(d); lo += per {
		part := d[lo:min(len(d), lo+per)]
		wg.Go(func() {
			for i, s := range part {
				s.deliver()
				part[i] = nil
			}
		})
	}
	for i, s := range d[:per] {
		s.deliver()
		d[i] = nil
	}
	wg.Wait()
}
