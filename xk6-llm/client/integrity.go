package client

import (
	"bytes"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Stream integrity: checks on every streamed answer for what a healthy
// engine never sends but a retrying or migrating router, a proxy that
// splices or cuts events, or an engine bug does (recording.IntegrityClasses).
// The checks run as the events arrive and decide when the answer ends: an
// answer that otherwise ended ok fails with the first violation's class, so
// its timings stay recorded and only its verdict changes. A request that
// failed or was cancelled for another reason keeps that reason.

// resumeMinRepeat is the least text (bytes) a resume point must re-send
// to count as a repeat: two tokens of English, so that a word said twice
// after a slow token is not taken for a replay.
const resumeMinRepeat = 8

// resumeMinGap is the least gap that can be a resume point: a new
// upstream request (prefill, a first token) never takes less, and jitter
// of a healthy stream (GC, scheduling) mostly does.
const resumeMinGap = 20 * time.Millisecond

// resumeGapFactor makes a gap a resume candidate when it is this many
// times the stream's mean gap so far (or the stream's first gap).
const resumeGapFactor = 3

// resumeMaxCandidates bounds the resume points a stream remembers.
const resumeMaxCandidates = 16

// resumeWindow bounds the bytes compared at a resume point.
const resumeWindow = 4096

// integrity is one stream's integrity state, part of the pooled
// streamState.
type integrity struct {
	class recording.ErrorClass // first violation; ClassNone when none
	msg   string

	id, model         []byte // first chunk's raw values (copies)
	idSeen, modelSeen bool

	gapSum     time.Duration // sum of the gaps between content chunks so far
	gaps       int
	candidates []int // byte offsets in the content where a chunk came after a long gap
}

// reset readies i for a new stream, keeping its buffers.
func (i *integrity) reset() {
	i.class, i.msg = recording.ClassNone, ""
	i.id, i.model = i.id[:0], i.model[:0]
	i.idSeen, i.modelSeen = false, false
	i.gapSum, i.gaps = 0, 0
	i.candidates = i.candidates[:0]
}

// note records a violation; the first one wins.
func (i *integrity) note(class recording.ErrorClass, format string, args ...any) {
	if i.class == recording.ClassNone {
		i.class, i.msg = class, fmt.Sprintf(format, args...)
	}
}

// chunk checks one parsed chunk of a stream that has (finished) or has not
// seen its finish_reason yet.
func (i *integrity) chunk(f *chunkFields, data []byte, finished bool) {
	if i.class != recording.ClassNone {
		return
	}
	if !utf8.Valid(data) {
		i.note(recording.ClassIntegrityInvalidUTF8, "chunk is not valid UTF-8")
		return
	}
	if f.id != nil {
		if !i.idSeen {
			i.id, i.idSeen = append(i.id[:0], f.id...), true
		} else if !bytes.Equal(i.id, f.id) {
			i.note(recording.ClassIntegrityIDChanged, "response id changed mid-stream from %s to %s", i.id, f.id)
			return
		}
	}
	if f.model != nil {
		if !i.modelSeen {
			i.model, i.modelSeen = append(i.model[:0], f.model...), true
		} else if !bytes.Equal(i.model, f.model) {
			i.note(recording.ClassIntegrityModelChanged, "model changed mid-stream from %s to %s", i.model, f.model)
			return
		}
	}
	if f.nChoices > 1 || f.index > 0 {
		i.note(recording.ClassIntegrityChoiceIndex, "chunk with %d choices, first index %d (one choice, index 0, asked)", f.nChoices, f.index)
		return
	}
	if finished && (f.carriesToken() || f.hasFinish) {
		i.note(recording.ClassIntegrityAfterFinish, "chunk with content or a finish_reason after the finish_reason chunk")
	}
}

// token notes a content chunk that starts at byte off of the content and
// came gap after the previous one (first: it is the first).
func (i *integrity) token(off int, gap time.Duration, first bool) {
	if first {
		return
	}
	if gap >= resumeMinGap && (i.gaps == 0 || gap*time.Duration(i.gaps) > resumeGapFactor*i.gapSum) {
		if len(i.candidates) < resumeMaxCandidates && off >= resumeMinRepeat {
			i.candidates = append(i.candidates, off)
		}
	}
	i.gapSum += gap
	i.gaps++
}

// end runs the checks that need the whole answer (content is all of its
// text) and returns the violation, if any.
func (i *integrity) end(res *recording.Result, content []byte) (recording.ErrorClass, string) {
	if i.class != recording.ClassNone {
		return i.class, i.msg
	}
	for _, p := range i.candidates {
		if l := repeatAt(content, p); l > 0 {
			return recording.ClassIntegrityResumeRepeat, fmt.Sprintf("%d bytes re-sent after a gap at byte %d of the answer: %q", l, p, trimQuote(content[p:p+l]))
		}
	}
	if res.UsageReported && res.ContentChunks > res.OutputTokens && recording.UsageMismatch(res.OutputTokens, res.ContentChunks) {
		return recording.ClassIntegrityUsageMismatch, fmt.Sprintf("%d content chunks but usage.completion_tokens %d", res.ContentChunks, res.OutputTokens)
	}
	if res.FinishReason == "stop" && res.ContentChunks == 0 {
		return recording.ClassIntegrityEmptyStop, "finish_reason stop with no content"
	}
	return recording.ClassNone, ""
}

// repeatAt returns the length of the longest text that content re-sends at
// p, content[p:p+l] == content[p-l:p] with l at least resumeMinRepeat
// bytes; 0 when none, or when the text before p already repeats with the
// shortest such period (a model in a loop, not a replay).
func repeatAt(content []byte, p int) int {
	n := min(p, len(content)-p, resumeWindow)
	period := 0
	for q := 1; q <= n; q++ {
		if bytes.Equal(content[p:p+q], content[p-q:p]) {
			period = q
			break
		}
	}
	if period == 0 {
		return 0
	}
	if q := period; p >= 2*q && bytes.Equal(content[p-2*q:p-q], content[p-q:p]) {
		return 0
	}
	for l := n; l >= resumeMinRepeat; l-- {
		if bytes.Equal(content[p:p+l], content[p-l:p]) {
			return l
		}
	}
	return 0
}

// trimQuote bounds a quoted span in an error text.
func trimQuote(b []byte) string {
	if len(b) > 48 {
		return string(b[:48]) + "…"
	}
	return string(b)
}
