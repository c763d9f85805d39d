package sim

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Finish says how a sequence ended.
type Finish uint8

// Finish values. FinishNone means the sequence is still going.
const (
	FinishNone      Finish = iota
	FinishStop             // the model emitted end-of-sequence (finish_reason "stop")
	FinishLength           // capped by max_tokens (finish_reason "length")
	FinishCancelled        // the client went away or the caller cancelled it
	FinishError            // the engine died; Err says why
)

// String returns the OpenAI finish_reason for stop and length, and "abort"
// and "error" for the others.
func (f Finish) String() string {
	switch f {
	case FinishStop:
		return "stop"
	case FinishLength:
		return "length"
	case FinishCancelled:
		return "abort"
	case FinishError:
		return "error"
	default:
		return ""
	}
}

type seqState uint8

const (
	stateWaiting seqState = iota
	stateRunning
	stateDone
)

// Stream is one sequence in the engine. The engine owns its scheduling state;
// the consumer (an HTTP handler) reads its progress from any goroutine
// through Ready, Progress, AppendToken and Err, which need no lock, and is
// told of progress either on Ready or, once it has set one, through a sink
// (SetSink) that the engine's own goroutine calls.
type Stream struct {
	// Immutable after Submit.
	id        uint64
	prompt    int
	maxTokens int
	outLen    int    // tokens it will produce
	reason    Finish // how it ends after outLen tokens
	seed      uint64 // token text seed
	skip      int    // tokens of the answer generated elsewhere before this stream (Request.ResumeFrom)
	arrival   time.Duration

	// divergeAt is 1 + the first token whose text comes from divergeSeed
	// instead of seed (0: none): the continuation a preemption's
	// recomputation or a batch-size change chose (Config.Divergence).
	// The engine sets it before it publishes that token; consumers read
	// it for tokens already published, from any goroutine.
	divergeAt   atomic.Int64
	divergeSeed atomic.Uint64

	// Engine-owned scheduling state.
	state     seqState
	order     uint64 // admission order; the largest is the newest
	numTokens int    // prompt + generated
	computed  int    // tokens whose KV entries are computed
	blocks    int    // KV blocks held
	generated int
	scheduled int           // tokens scheduled in the current step
	nextAt    time.Duration // paced mode: when the next token is due
	heapIdx   int
	admitted  bool
	lastTok   time.Duration
	collected bool // in Engine.published, not yet taken

	// Published to the consumer.
	pub   atomic.Uint64          // tokens generated | Finish<<32
	ready chan struct{}          // capacity 1; signalled after every publish without a sink
	sink  atomic.Pointer[func()] // nil: publishes signal ready
	err   error                  // written before a FinishError publish
}

// ID returns the engine's number for the stream, unique within one engine.
func (s *Stream) ID() uint64 { return s.id }

// PromptTokens returns the prompt length the stream was submitted with.
func (s *Stream) PromptTokens() int { return s.prompt }

// MaxTokens returns the completion cap in force (the request's max_tokens,
// or what MaxModelLen leaves when it gave none).
func (s *Stream) MaxTokens() int { return s.maxTokens }

// Ready receives after the stream made progress: new tokens or its end. A
// consumer reads Progress, handles it, then waits on Ready again; no wakeup
// is lost because the channel buffers one signal. While a sink is set
// (SetSink), progress calls the sink instead and Ready receives only what
// Wake sends.
func (s *Stream) Ready() <-chan struct{} { return s.ready }

// Progress returns how many tokens the stream has produced so far and, once
// it has ended, how. The tokens counted are final when Finish is not
// FinishNone: the last content token and the finish are published together.
func (s *Stream) Progress() (tokens int, fin Finish) {
	v := s.pub.Load()
	return int(uint32(v)), Finish(v >> 32)
}

// Err returns why the stream ended with FinishError (an error wrapping the
// engine's death), or nil.
func (s *Stream) Err() error {
	if _, fin := s.Progress(); fin != FinishError {
		return nil
	}
	return s.err
}

// Token returns the text of token i (0-based).
func (s *Stream) Token(i int) string { return tokenText(s.tokenSeed(i), i+s.skip) }

// AppendToken appends the text of token i (0-based) to dst. Token texts are
// JSON-safe and exactly BytesPerToken bytes long.
func (s *Stream) AppendToken(dst []byte, i int) []byte {
	return append(dst, tokenText(s.tokenSeed(i), i+s.skip)...)
}

// tokenSeed is the text seed of token i: seed, or divergeSeed from the
// divergence on.
func (s *Stream) tokenSeed(i int) uint64 {
	if at := s.divergeAt.Load(); at > 0 && int64(i) >= at-1 {
		return s.divergeSeed.Load()
	}
	return s.seed
}

// Salts of the divergence seeds.
const (
	greedySalt         = 0x6772656564790000 // "greedy"
	divergePreemptSalt = 0x707265656d707400 // "preempt"
	divergeTieSalt     = 0x7469650000000000 // "tie"
)

// tieRate is the share of token positions that are near-ties, where the
// batch size's numerics decide the argmax (Config.Divergence batch).
const tieRate = 0.03

// diverge makes tokens from i on follow another continuation, derived
// from salt; only the first divergence of a stream counts.
func (s *Stream) diverge(i int, salt uint64) {
	if s.divergeAt.Load() != 0 {
		return
	}
	s.divergeSeed.Store(mix64(s.seed ^ salt))
	s.divergeAt.Store(int64(i) + 1)
}

// divergeAtTie diverges at token i when i is a near-tie position of the
// sequence and the step's batch size is in another power-of-two bucket
// than a lone sequence's (batch sizes 1), as kernels whose reduction
// order depends on the batch shape pick another argmax there.
func (s *Stream) divergeAtTie(i, batch int) {
	if batch <= 1 || unitFloat(mix64(s.seed^divergeTieSalt^uint64(i))) >= tieRate {
		return
	}
	s.diverge(i, divergeTieSalt^uint64(bits.Len(uint(batch))))
}

// Wake signals Ready without progress, so that a consumer blocked on Ready
// can notice something else, such as its client going away.
func (s *Stream) Wake() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// SetSink makes f the stream's sink, or, for nil, removes it; it may be
// called from any goroutine at any time. While a sink is set, the engine
// collects the stream when it publishes progress (see Engine.TakePublished)
// instead of signalling Ready, and Live.Run calls f on its own goroutine
// once per collection, after it has released the engine: f reads Progress
// as any consumer does. f must return quickly and never block, for every
// stream's tokens wait on it; it may call Wake. Progress published before
// the sink was set was signalled on Ready, and a collected stream whose sink
// was removed before delivery gets a Wake.
func (s *Stream) SetSink(f func()) {
	if f == nil {
		s.sink.Store(nil)
		return
	}
	s.sink.Store(&f)
}

// deliver tells the consumer of a collected stream that it made progress.
func (s *Stream) deliver() {
	if f := s.sink.Load(); f != nil {
		(*f)()
		return
	}
	s.Wake()
}
