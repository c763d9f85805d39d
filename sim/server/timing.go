package server

import (
	"net/http"
	"time"
)

// StreamTiming is what the simulator itself recorded of one streamed
// response: when its handler received the request and when each write of
// the stream went out. Times are time.Now readings of the serving process
// and carry its monotonic clock, so a client in the same process compares
// them with its own readings (time.Time.Sub, or offsets from a common
// start) without any wall-clock offset.
//
// It exists so that tests and benchmarks can measure a client's error
// alone — the client's TTFT and inter-token gaps minus the ones the server
// produced for the same request — instead of the client's reading against
// the configured latency, which also measures the simulator's own
// scheduling on a busy machine.
type StreamTiming struct {
	// RequestID is the request's X-Request-Id header ("" when it had none).
	RequestID string
	// Received is when the handler started on the request: its head had
	// been read, its body not yet.
	Received time.Time
	// Writes are the stream's writes in order, the response head's
	// included. A write may carry several tokens (a client that fell
	// behind) or none (the head, the role chunk, the end of the stream).
	Writes []StreamWrite
}

// StreamWrite is one write of a stream on its connection.
type StreamWrite struct {
	// At is read just before the write starts: no byte of it can reach the
	// client earlier.
	At time.Time
	// Tokens is how many content tokens the stream had sent once this
	// write was done (cumulative): the tokens this write carried are
	// those after the previous write's count.
	Tokens int
}

// TokenTimes returns, for each content token i, the At of the write that
// carried it.
func (t *StreamTiming) TokenTimes() []time.Time {
	var at []time.Time
	for _, w := range t.Writes {
		for len(at) < w.Tokens {
			at = append(at, w.At)
		}
	}
	return at
}

// streamTimer records one stream's writes when Options.StreamTiming is
// set; the zero value (nil report) records nothing and costs a branch.
type streamTimer struct {
	t      *StreamTiming
	report func(*StreamTiming)
}

func newStreamTimer(report func(*StreamTiming), r *http.Request, received time.Time) streamTimer {
	if report == nil {
		return streamTimer{}
	}
	return streamTimer{
		t:      &StreamTiming{RequestID: r.Header.Get("X-Request-Id"), Received: received, Writes: make([]StreamWrite, 0, 64)},
		report: report,
	}
}

// write records a write about to start that leaves tokens content tokens sent.
func (st streamTimer) write(tokens int) {
	if st.t != nil {
		st.t.Writes = append(st.t.Writes, StreamWrite{At: time.Now(), Tokens: tokens})
	}
}

// done hands the record over; the stream writes nothing after it.
func (st streamTimer) done() {
	if st.t != nil {
		st.report(st.t)
	}
}
