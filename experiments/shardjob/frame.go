package shardjob

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"sync"
)

// A shard hands its request lines and its report back through its pod's
// log, and a container runtime reads stdout and stderr through separate
// pipes: the log interleaves them in an order of its own, and a partial
// line of one stream may land inside a line of the other. `llmchaos load
// --framed` (what every shard runs) therefore writes what it hands back as
// frames that a reader can find and verify in any such log:
//
//   - what goes to stdout is a sequence of records: each request line is
//     one ('q'), the JSON report is the last ('r');
//   - a record is cut into chunks of up to FrameChunk bytes, each written
//     as one frame line of a fixed length (FrameLineLen bytes with its
//     newline): the marker "@@lc1", the record's kind, its number (8 hex
//     digits), the chunk's index and the record's chunk count (6 hex
//     digits each), the chunk's length (2 hex digits), the CRC-32 (IEEE)
//     of all that and the chunk (8 hex digits), and the chunk in base64,
//     padded with zero bytes to FrameChunk;
//   - every line a shard writes goes to stdout, human ones included, each
//     in one write, so that in a pod its stderr is empty unless it
//     crashes.
//
// Unframe finds the frames anywhere in a log (a line of stderr before one
// on the same line is skipped), verifies each by its CRC, and repairs a
// frame line into which one contiguous run of foreign bytes (newlines
// included) was inserted: the line's fixed length says how many bytes
// were inserted once its end is found, and the CRC which of them. A
// record whose chunks are not all there, a record number missing before
// the report, or no complete report makes the shard's output lost: an
// error, never a report with requests left out.

// FrameMarker starts every frame line.
const FrameMarker = "@@lc1"

// FrameChunk is the most bytes of a record one frame line carries.
const FrameChunk = 192

// Frame kinds: a request line, the report.
const (
	FrameRequest = 'q'
	FrameReport  = 'r'
)

const (
	frameHeaderLen = len(FrameMarker) + 1 + 8 + 6 + 6 + 2 // marker, kind, record, index, count, length
	frameB64Len    = (FrameChunk + 2) / 3 * 4
	// FrameLineLen is the length of every frame line, its newline
	// included.
	FrameLineLen = frameHeaderLen + 8 + frameB64Len + 1
	maxChunks    = 1<<24 - 1
	// repairWindow is how far past a damaged frame line's start Unframe
	// looks for its end: the most foreign bytes one insertion may hold.
	repairWindow = 16 << 10
)

// FrameWriter writes records as frame lines to an io.Writer, each record
// in one Write. It is safe for concurrent use.
type FrameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	rec uint32
	err error
}

// NewFrameWriter returns a FrameWriter that writes to w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// Record writes data as the next record, of kind FrameRequest or
// FrameReport. An error is sticky.
func (f *FrameWriter) Record(kind byte, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	n := max(1, (len(data)+FrameChunk-1)/FrameChunk)
	if n > maxChunks {
		f.err = fmt.Errorf("framed output: a record of %d bytes is more than %d frames", len(data), maxChunks)
		return f.err
	}
	buf := make([]byte, 0, n*FrameLineLen)
	for i := range n {
		chunk := data[min(i*FrameChunk, len(data)):min((i+1)*FrameChunk, len(data))]
		buf = appendFrame(buf, kind, f.rec, i, n, chunk)
	}
	f.rec++
	if _, err := f.w.Write(buf); err != nil {
		f.err = fmt.Errorf("framed output: %w", err)
	}
	return f.err
}

// Lines returns a writer that frames every complete line written to it
// (its newline included) as one record of kind; a last line without a
// newline is framed by Close.
func (f *FrameWriter) Lines(kind byte) io.WriteCloser { return &lineFramer{f: f, kind: kind} }

type lineFramer struct {
	f       *FrameWriter
	kind    byte
	mu      sync.Mutex
	pending []byte
}

func (l *lineFramer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, p...)
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			break
		}
		if err := l.f.Record(l.kind, l.pending[:i+1]); err != nil {
			return 0, err
		}
		l.pending = l.pending[i+1:]
	}
	if len(l.pending) == 0 {
		l.pending = nil
	}
	return len(p), nil
}

func (l *lineFramer) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	err := l.f.Record(l.kind, l.pending)
	l.pending = nil
	return err
}

// appendFrame appends the frame line of chunk i of n of record rec.
func appendFrame(buf []byte, kind byte, rec uint32, i, n int, chunk []byte) []byte {
	start := len(buf)
	buf = append(buf, FrameMarker...)
	buf = append(buf, kind)
	buf = appendHex(buf, uint64(rec), 8)
	buf = appendHex(buf, uint64(i), 6)
	buf = appendHex(buf, uint64(n), 6)
	buf = appendHex(buf, uint64(len(chunk)), 2)
	sum := crc32.ChecksumIEEE(buf[start:])
	sum = crc32.Update(sum, crc32.IEEETable, chunk)
	buf = appendHex(buf, uint64(sum), 8)
	var padded [FrameChunk]byte
	copy(padded[:], chunk)
	buf = base64.StdEncoding.AppendEncode(buf, padded[:])
	return append(buf, '\n')
}

func appendHex(buf []byte, v uint64, digits int) []byte {
	s := strconv.FormatUint(v, 16)
	for range digits - len(s) {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// frame is one verified frame line.
type frame struct {
	kind   byte
	rec    uint32
	idx, n int
	data   []byte
}

// parseFrame parses and verifies line, FrameLineLen bytes.
func parseFrame(line []byte) (frame, bool) {
	if len(line) != FrameLineLen || line[FrameLineLen-1] != '\n' || !bytes.HasPrefix(line, []byte(FrameMarker)) {
		return frame{}, false
	}
	h := line[len(FrameMarker):]
	kind := h[0]
	if kind != FrameRequest && kind != FrameReport {
		return frame{}, false
	}
	var vals [5]uint64
	off := 1
	for k, digits := range []int{8, 6, 6, 2, 8} {
		v, ok := parseHex(h[off : off+digits])
		if !ok {
			return frame{}, false
		}
		vals[k] = v
		off += digits
	}
	rec, idx, n, size, sum := vals[0], int(vals[1]), int(vals[2]), int(vals[3]), uint32(vals[4])
	if n < 1 || idx >= n || size > FrameChunk {
		return frame{}, false
	}
	var padded [FrameChunk]byte
	b64 := line[frameHeaderLen+8 : FrameLineLen-1]
	if k, err := base64.StdEncoding.Decode(padded[:], b64); err != nil || k != FrameChunk {
		return frame{}, false
	}
	got := crc32.ChecksumIEEE(line[:frameHeaderLen])
	got = crc32.Update(got, crc32.IEEETable, padded[:size])
	if got != sum {
		return frame{}, false
	}
	return frame{kind: kind, rec: uint32(rec), idx: idx, n: n, data: slices.Clone(padded[:size])}, true
}

func parseHex(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// repairFrame looks for a frame line that starts at w[0] and into which
// one contiguous run of bytes was inserted after its first byte: for each
// newline that could end it, the inserted length is fixed, and each place
// it could have been inserted at is tried against the CRC. It returns the
// frame, how many bytes of w it spans, and where in w the inserted bytes
// are.
func repairFrame(w []byte) (f frame, span, at, inserted int, ok bool) {
	w = w[:min(len(w), FrameLineLen+repairWindow)]
	line := make([]byte, FrameLineLen)
	for q := FrameLineLen - 1; q < len(w); q++ {
		if w[q] != '\n' {
			continue
		}
		d := q - (FrameLineLen - 1) // bytes inserted
		if d == 0 {
			continue // intact, and parseFrame refused it
		}
		for a := 1; a < FrameLineLen; a++ {
			copy(line, w[:a])
			copy(line[a:], w[a+d:FrameLineLen+d])
			if a < len(FrameMarker)+1 && !bytes.HasPrefix(line, []byte(FrameMarker)) {
				continue
			}
			if f, ok := parseFrame(line); ok {
				return f, FrameLineLen + d, a, d, true
			}
		}
	}
	return frame{}, 0, 0, 0, false
}

// Framed is what Unframe found in a log.
type Framed struct {
	// Requests holds the request lines, in order.
	Requests []byte
	// Report is the JSON report.
	Report []byte
	// Records is how many records there were, the report included;
	// Repaired how many frame lines had foreign bytes inside them.
	Records, Repaired int
}

// ErrLost is wrapped by Unframe's error when the log's frames do not
// hold the shard's output whole.
var ErrLost = errors.New("the shard's framed output is not whole in its log")

// Unframe reassembles and verifies the framed output of `llmchaos load
// --framed` from log (see FrameMarker). The lines of the log that are no
// part of a frame are returned in other (what a shard printed for
// people, its stderr).
func Unframe(log []byte) (out Framed, other []byte, err error) {
	type record struct {
		kind   byte
		chunks [][]byte
		got    []bool
		have   int
	}
	recs := map[uint32]*record{}
	add := func(f frame) {
		r := recs[f.rec]
		if r == nil {
			r = &record{kind: f.kind, chunks: make([][]byte, f.n), got: make([]bool, f.n)}
			recs[f.rec] = r
		}
		if r.kind != f.kind || len(r.chunks) != f.n || r.got[f.idx] {
			return // a duplicate, or a frame that disagrees with the first
		}
		r.chunks[f.idx], r.got[f.idx] = f.data, true
		r.have++
	}
	var rest bytes.Buffer
	last := 0 // log[last:p] is not part of a frame
	for p := 0; p < len(log); {
		i := bytes.IndexByte(log[p:], '@')
		if i < 0 {
			break
		}
		p += i
		if p+FrameLineLen <= len(log) {
			if f, ok := parseFrame(log[p : p+FrameLineLen]); ok {
				add(f)
				rest.Write(log[last:p])
				p += FrameLineLen
				last = p
				continue
			}
		}
		if f, n, at, d, ok := repairFrame(log[p:]); ok {
			add(f)
			out.Repaired++
			// The inserted bytes are part of the log's other lines.
			rest.Write(log[last:p])
			rest.Write(log[p+at : p+at+d])
			p += n
			last = p
			continue
		}
		p++
	}
	rest.Write(log[last:])
	other = rest.Bytes()
	if len(recs) == 0 {
		return out, other, fmt.Errorf("%w: no frames in it", ErrLost)
	}
	report := uint32(0)
	found := false
	for n, r := range recs {
		if r.kind == FrameReport && (!found || n > report) {
			report, found = n, true
		}
	}
	if !found {
		return out, other, fmt.Errorf("%w: no frame of its report (it ended before writing it, or was killed)", ErrLost)
	}
	var req bytes.Buffer
	for n := uint32(0); n <= report; n++ {
		r := recs[n]
		if r == nil {
			return out, other, fmt.Errorf("%w: record %d of %d is missing", ErrLost, n, report+1)
		}
		if r.have < len(r.chunks) {
			return out, other, fmt.Errorf("%w: record %d has %d of its %d frames", ErrLost, n, r.have, len(r.chunks))
		}
		switch {
		case n == report:
			out.Report = bytes.Join(r.chunks, nil)
		case r.kind == FrameRequest:
			for _, c := range r.chunks {
				req.Write(c)
			}
		default:
			return out, other, fmt.Errorf("%w: record %d is a second report", ErrLost, n)
		}
	}
	out.Requests, out.Records = req.Bytes(), int(report)+1
	return out, other, nil
}

// liveFrames reassembles the request records of a framed log as its lines
// come, for LineLog: frame lines that arrive whole (a damaged one is left
// to Unframe at the end).
type liveFrames struct {
	recs map[uint32]*liveRecord
}

type liveRecord struct {
	chunks [][]byte
	left   int
}

// line takes one line of the log (without its newline); it returns a
// request line when line completes one, and whether line was a frame.
func (l *liveFrames) line(line []byte) (req []byte, isFrame bool) {
	i := bytes.Index(line, []byte(FrameMarker))
	if i < 0 || len(line)-i != FrameLineLen-1 {
		return nil, false
	}
	b := make([]byte, FrameLineLen)
	copy(b, line[i:])
	b[FrameLineLen-1] = '\n'
	f, ok := parseFrame(b)
	if !ok {
		return nil, false
	}
	if f.kind != FrameRequest {
		return nil, true
	}
	if l.recs == nil {
		l.recs = map[uint32]*liveRecord{}
	}
	r := l.recs[f.rec]
	if r == nil {
		r = &liveRecord{chunks: make([][]byte, f.n), left: f.n}
		l.recs[f.rec] = r
	}
	if len(r.chunks) != f.n || r.chunks[f.idx] != nil {
		return nil, true
	}
	r.chunks[f.idx] = f.data
	r.left--
	if r.left > 0 {
		return nil, true
	}
	delete(l.recs, f.rec)
	return bytes.TrimRight(bytes.Join(r.chunks, nil), "\r\n"), true
}
