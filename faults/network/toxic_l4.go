package network

import (
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Stream is the direction of the bytes an L4 toxic acts on, named as in
// Toxiproxy: upstream is client → target (requests), downstream is
// target → client (responses).
type Stream string

// Streams an L4 toxic can act on.
const (
	Downstream  Stream = "downstream"
	Upstream    Stream = "upstream"
	BothStreams Stream = "both"
)

// orDefault returns s, or Downstream when s is empty.
func (s Stream) orDefault() Stream {
	if s == "" {
		return Downstream
	}
	return s
}

func (s Stream) problems() field.Problems {
	switch s {
	case Downstream, Upstream, BothStreams:
		return nil
	}
	return field.Problems{field.Errorf("stream", "%s %q: want upstream, downstream or both", field.Path("stream"), s)}
}

// covers reports whether a toxic on s acts on the bytes of direction d.
func (s Stream) covers(d Stream) bool { return s == BothStreams || s == d }

// l4Toxic is an L4 toxic as a proxy runs it; each direction of each
// connection it covers gets its own linkToxic state.
type l4Toxic struct {
	name   string
	stream Stream
	// newLink returns the toxic's state for one direction of a connection,
	// starting (toxic added or connection opened) at start.
	newLink func(start time.Time) linkToxic
}

func (t *l4Toxic) toxicName() string { return t.name }

// action is what a toxic does to a connection on its own.
type action int

const (
	actNone  action = iota
	actClose        // close both sides (FIN)
	actReset        // close both sides with SO_LINGER 0 (RST)
)

// chunk is one read from a connection, stamped when it arrived.
type chunk struct {
	data []byte
	at   time.Time
	seq  uint64 // per direction, so toxics can draw once per chunk
}

// plan is how the next piece of a chunk goes out; toxics narrow it in turn.
type plan struct {
	n    int       // at most this many bytes
	at   time.Time // not before this time
	hold bool      // not at all until the toxics change or one acts
	drop bool      // discard the rest of the chunk
}

// linkToxic is one toxic's state on one direction of one connection. It is
// used by that direction's pump goroutine only.
type linkToxic interface {
	// plan narrows the delivery of the next piece of c.
	plan(c *chunk, p *plan)
	// commit records that n bytes went out at t.
	commit(n int, t time.Time)
	// due says when the toxic acts on the connection by itself and how
	// (actNone: never). A time not after now means at once.
	due() (time.Time, action)
	// closeDelay is how long an end of stream waits before it is passed on.
	closeDelay() time.Duration
}

// linkBase gives a linkToxic no-op defaults.
type linkBase struct{}

func (linkBase) plan(*chunk, *plan)        {}
func (linkBase) commit(int, time.Time)     {}
func (linkBase) due() (time.Time, action)  { return time.Time{}, actNone }
func (linkBase) closeDelay() time.Duration { return 0 }

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
