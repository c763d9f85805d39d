package server

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/sim"
)

// rawStream is one stream written on a hijacked connection with our own
// chunked framing. Its bytes are built and written under mu by one of two
// goroutines:
//
//   - the engine's (sim.Live.Run), through deliver, the stream's sink: it
//     builds the newly published tokens and writes them with one
//     non-blocking write(2) straight on the socket, so a token costs no
//     goroutine wake-up and one engine wake-up writes every due stream;
//   - the handler's (serve), which writes the response head, and takes over
//     whenever the sink cannot finish without blocking: a partial write or
//     a full socket buffer (a slow reader), the mutex held by the handler,
//     the end of the stream, an error or a client gone. It writes with the
//     connection's blocking Write until it has caught up, then hands the
//     stream back to the sink.
//
// hookOn says which: the sink writes only while it is set, which the
// handler does when it has caught up and waits on the stream's Ready; the
// sink clears it, and wakes the handler, when it gives up. A connection
// without a raw socket (rc nil) is written by the handler alone, one write
// per wake-up of the stream.
type rawStream struct {
	srv  *server
	conn net.Conn
	rc   syscall.RawConn // the socket under conn; nil: no sink
	st   *sim.Stream
	p    *parsed
	c    *chunker
	w    *watcher
	tm   streamTimer

	mu      sync.Mutex
	hookOn  bool // the sink may write: the handler has caught up and waits
	payload []byte
	out     []byte // built and not yet written: the head, chunks, the end
	fresh   bool   // out holds bytes that no StreamWrite record covers yet
	written int    // tokens built into out (or written)
	ended   bool   // the end of the stream is built into out (or written)

	writeFD func(fd uintptr) bool // rs.writeOut, made once: rc.Write's callback
	wn      int                   // what writeOut wrote
}

// rawWrites counts the writes of raw streams by the goroutine that made
// them, for tests: the engine's (sink) and the handlers'.
type rawWrites struct {
	sink, handler atomic.Int64
}

// rawEnd is how serve ended.
type rawEnd uint8

const (
	rawDone   rawEnd = iota // the whole stream is written
	rawCut                  // the engine ended the stream (error, cancel): cut it
	rawClient               // the client went away or a write failed: cut and cancel
)

// newRawStream prepares st's stream on conn: the response head is built
// into out, to be written by serve, and for chat the role chunk into the
// payload, which goes out with the first token (at once with EarlyRoleChunk).
func newRawStream(srv *server, conn net.Conn, keepAlive bool, st *sim.Stream, p *parsed, id string, w *watcher, tm streamTimer) *rawStream {
	rs := &rawStream{srv: srv, conn: conn, rc: rawConnOf(conn), st: st, p: p, w: w, tm: tm,
		c:       newChunker(p.chat, id, time.Now().Unix(), srv.cfg.Model),
		payload: make([]byte, 0, 512), // one token event is about 200 bytes
		out:     make([]byte, 0, 512),
		fresh:   true, // the head
	}
	rs.writeFD = rs.writeOut
	rs.out = append(rs.out, streamHead...)
	rs.out = append(rs.out, "Date: "...)
	rs.out = time.Now().UTC().AppendFormat(rs.out, http.TimeFormat)
	rs.out = append(rs.out, "\r\n"...)
	if !keepAlive {
		rs.out = append(rs.out, "Connection: close\r\n"...)
	}
	rs.out = append(rs.out, "\r\n"...)
	if p.chat {
		rs.payload = rs.c.appendRole(rs.payload)
	}
	return rs
}

// build appends to out, as one chunk, the events of tokens published since
// the last build and, once fin is set, the finish, usage, [DONE] and the
// last chunk.
func (rs *rawStream) build(n int, fin sim.Finish) {
	if rs.ended {
		return
	}
	before := len(rs.out)
	held := rs.written == 0 && fin == sim.FinishNone && !rs.srv.earlyRole // the role chunk waits for a token
	for ; rs.written < n; rs.written++ {
		finish := ""
		if fin != sim.FinishNone && rs.written == n-1 {
			finish = fin.String()
		}
		rs.payload = rs.c.appendToken(rs.payload, rs.st, rs.written, finish)
	}
	if fin != sim.FinishNone {
		if rs.p.includeUsage {
			rs.payload = rs.c.appendUsage(rs.payload, rs.st.PromptTokens(), n)
		}
		rs.payload = append(rs.payload, doneEvent...)
	}
	if len(rs.payload) > 0 && (!held || rs.written > 0) {
		rs.out = strconv.AppendInt(rs.out, int64(len(rs.payload)), 16)
		rs.out = append(rs.out, "\r\n"...)
		rs.out = append(rs.out, rs.payload...)
		rs.out = append(rs.out, "\r\n"...)
		rs.payload = rs.payload[:0]
	}
	if fin != sim.FinishNone {
		rs.out = append(rs.out, "0\r\n\r\n"...)
		rs.ended = true
	}
	if len(rs.out) > before {
		rs.fresh = true
	}
}

// record notes in the stream's timing record a write about to start, when
// out holds bytes of its own: bytes left by a partial write were recorded
// with it (no byte of them went out before its time).
func (rs *rawStream) record() {
	if rs.fresh {
		rs.tm.write(rs.written)
		rs.fresh = false
	}
}

// serve writes the stream from the handler's goroutine until it has ended,
// handing it to the sink whenever it has caught up. It is called with mu
// held and returns with it released and the sink off.
func (rs *rawStream) serve() rawEnd {
	for {
		if rs.ended && len(rs.out) == 0 {
			rs.mu.Unlock()
			return rawDone
		}
		n, fin := rs.st.Progress()
		if fin == sim.FinishError || fin == sim.FinishCancelled {
			rs.mu.Unlock()
			return rawCut // as a crashed server would
		}
		if rs.w.gone.Load() {
			rs.mu.Unlock()
			return rawClient
		}
		rs.build(n, fin)
		if len(rs.out) > 0 {
			rs.record()
			rs.srv.rawWrites.handler.Add(1)
			if _, err := rs.conn.Write(rs.out); err != nil {
				rs.mu.Unlock()
				return rawClient
			}
			rs.out = rs.out[:0]
		}
		if rs.ended {
			rs.mu.Unlock()
			return rawDone
		}
		rs.hookOn = rs.rc != nil
		rs.mu.Unlock()
		<-rs.st.Ready()
		rs.mu.Lock()
		rs.hookOn = false
	}
}

// deliver is the stream's sink, called on the engine's goroutine after it
// published progress: it writes the new tokens without blocking, or leaves
// them to the handler and wakes it.
func (rs *rawStream) deliver() {
	if !rs.mu.TryLock() {
		rs.st.Wake() // the handler is at work: it reads Progress again
		return
	}
	if rs.hookOn {
		rs.hookOn = rs.writeNew()
	}
	wake := !rs.hookOn
	rs.mu.Unlock()
	if wake {
		rs.st.Wake()
	}
}

// writeNew writes what the stream published since the last write with one
// non-blocking write(2). It reports whether the sink may go on: false when
// the handler has to take over (bytes left, the end, an error, the client
// gone).
func (rs *rawStream) writeNew() bool {
	n, fin := rs.st.Progress()
	if fin == sim.FinishError || fin == sim.FinishCancelled || rs.w.gone.Load() {
		return false // the handler cuts the stream
	}
	rs.build(n, fin)
	if len(rs.out) == 0 {
		return true
	}
	rs.record()
	rs.srv.rawWrites.sink.Add(1)
	rs.wn = 0
	// On an error (a closed connection) nothing was written; the handler's
	// blocking Write meets it again and reports it.
	_ = rs.rc.Write(rs.writeFD)
	rs.out = rs.out[:copy(rs.out, rs.out[rs.wn:])]
	return len(rs.out) == 0 && !rs.ended
}

// writeOut is rc.Write's callback: one write(2) of out on the non-blocking
// socket, never a wait for it to drain. A failed or refused write (EAGAIN)
// writes nothing; the handler's blocking Write then finishes the bytes or
// reports the error.
func (rs *rawStream) writeOut(fd uintptr) bool {
	n, err := sysWrite(fd, rs.out)
	if err != nil || n < 0 {
		n = 0
	}
	rs.wn = n
	return true
}
