package sim

import (
	"errors"
	"testing"
	"time"
)

// fakeMemory is a device whose free figure the test sets; it counts reads.
type fakeMemory struct {
	total    int64
	free     int64
	reserved int64
	reads    int
}

var _ Memory = (*fakeMemory)(nil)

func (m *fakeMemory) Reserve(n int64, what string) error {
	if n > m.free {
		return &ReserveError{What: what, Need: n, Free: m.free, Total: m.total}
	}
	m.free -= n
	m.reserved += n
	return nil
}
func (m *fakeMemory) Free() (int64, error) { m.reads++; return m.free, nil }
func (m *fakeMemory) Total() int64         { return m.total }
func (m *fakeMemory) Release() error {
	m.free += m.reserved
	m.reserved = 0
	return nil
}

// smallConfig is a tiny device: no weights, one byte of KV per token, so
// that the pool holds exactly blocks × 16 tokens; no activation memory.
func smallConfig(latency string, blocks int) Config {
	c := DefaultConfig()
	c.Latency = latency
	c.WeightBytes = 0
	c.KVBytesPerToken = 1
	c.GPUUtilization = 1
	c.GPUMemory = int64(blocks * DefaultBlockSize)
	c.ActivationBytesPerToken = 0
	c.MaxModelLen = min(1024, blocks*DefaultBlockSize)
	return c
}

func newTestEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := NewEngine(cfg, NewLocalMemory(cfg.GPUMemory))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

// transcript records, per stream, the engine time of each token and how the
// stream ended, as a client would observe them.
type transcript struct {
	streams []*Stream
	times   [][]time.Duration
	texts   [][]string
	fins    []Finish
}

func (tr *transcript) add(s *Stream) {
	tr.streams = append(tr.streams, s)
	tr.times = append(tr.times, nil)
	tr.texts = append(tr.texts, nil)
	tr.fins = append(tr.fins, FinishNone)
}

func (tr *transcript) collect(now time.Duration) {
	for i, s := range tr.streams {
		n, fin := s.Progress()
		for len(tr.times[i]) < n {
			tr.texts[i] = append(tr.texts[i], s.Token(len(tr.times[i])))
			tr.times[i] = append(tr.times[i], now)
		}
		tr.fins[i] = fin
	}
}

// arrival is one request submitted at an engine time.
type arrival struct {
	at  time.Duration
	req Request
}

// run submits arrivals at their times and advances the engine event by event
// (no sleeping) until nothing is scheduled or until passes.
func run(t *testing.T, e *Engine, arrivals []arrival, until time.Duration) *transcript {
	t.Helper()
	tr := &transcript{}
	now := time.Duration(0)
	i := 0
	for guard := 0; guard < 1_000_000; guard++ {
		for i < len(arrivals) && arrivals[i].at <= now {
			s, err := e.Submit(arrivals[i].at, arrivals[i].req)
			if err != nil {
				t.Fatalf("Submit #%d: %v", i, err)
			}
			tr.add(s)
			i++
		}
		next, ok := e.Advance(now)
		tr.collect(now)
		if i < len(arrivals) && (!ok || arrivals[i].at < next) {
			next, ok = arrivals[i].at, true
		}
		if !ok || next > until {
			return tr
		}
		now = next
	}
	t.Fatal("engine did not settle")
	return nil
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
