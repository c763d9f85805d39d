package assertions

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Goodput has one authoritative definition: recording.SLO, the objectives the
// recorder counts "good" requests against while the run records (DistServe,
// vLLM's benchmark `--goodput`: a request is good when it ended ok and met
// every objective given; goodput is good requests per second). ParseGoodput
// reads the flag straight into a recording.SLO, to be handed to
// recording.Options; the goodput metric of thresholds is then the
// recorder's count of good requests divided by the time the selection
// covers (see SummarySource). There is deliberately no second SLO type here
// that could drift from what the recorder counts.

// FormatGoodput returns slo in ParseGoodput's syntax,
// "ttft:500ms,tpot:50ms", or "" when no objective is set. ParseGoodput
// reads it back to the same objectives.
func FormatGoodput(slo recording.SLO) string {
	var parts []string
	for _, kv := range []struct {
		k string
		d time.Duration
	}{{"ttft", slo.TTFT}, {"tpot", slo.TPOT}, {"e2e", slo.E2E}} {
		if kv.d > 0 {
			parts = append(parts, kv.k+":"+formatMillis(kv.d))
		}
	}
	return strings.Join(parts, ",")
}

// formatMillis writes d exactly in milliseconds: "500ms", "0.25ms".
func formatMillis(d time.Duration) string {
	ms, ns := d/time.Millisecond, d%time.Millisecond
	s := strconv.FormatInt(int64(ms), 10)
	if ns != 0 {
		frac := strings.TrimRight(strconv.FormatInt(int64(ns)+1e6, 10)[1:], "0")
		s += "." + frac
	}
	return s + "ms"
}

// ParseGoodput reads the `--goodput` flag: KEY:VALUE pairs separated by
// commas or spaces, where KEY is ttft, tpot or e2e (vLLM's e2el is accepted
// too) and VALUE a positive number with an optional unit ms, s or us (µs);
// a plain number is in milliseconds, as in vLLM:
//
//	ttft:500ms,tpot:50ms
//	ttft:500 tpot:50 e2el:10000
//
// The objectives are the recorder's recording.SLO: a latency equal to its
// objective meets it, a request without a first token misses a TTFT
// objective, and one with at most one output token has no TPOT and meets a
// TPOT objective (as vLLM, which counts its TPOT as 0).
//
// Every problem is returned, joined, each a *ParseError pointing into s.
func ParseGoodput(s string) (recording.SLO, error) {
	p := &parser{what: "goodput", in: s}
	var g recording.SLO
	seen := map[string]bool{}
	p.skipSpace()
	if p.pos == len(s) {
		p.errorf(p.pos, "expected objectives such as ttft:500ms,tpot:50ms")
	}
	for p.pos < len(s) {
		before := len(p.errs)
		p.goodputPair(&g, seen)
		// Resynchronise at the next separator after a problem.
		for p.pos < len(s) {
			r, n := p.peek()
			if r == ',' || isSpace(r) {
				break
			}
			if len(p.errs) == before {
				p.errorf(p.pos, "unexpected %q after the objective (separate objectives with %q)", r, ",")
			}
			p.pos += n
		}
		p.skipSpace()
		if r, _ := p.peek(); r == ',' {
			p.pos++
			p.skipSpace()
			if p.pos == len(s) {
				p.errorf(p.pos, "expected an objective after %q", ",")
			}
		}
	}
	if err := p.err(); err != nil {
		return recording.SLO{}, err
	}
	return g, nil
}

// goodputPair reads `key ":" value [unit]` into g.
func (p *parser) goodputPair(g *recording.SLO, seen map[string]bool) {
	keyAt := p.pos
	key := p.word(isIdent)
	var field *time.Duration
	switch key {
	case "ttft":
		field = &g.TTFT
	case "tpot":
		field = &g.TPOT
	case "e2e", "e2el":
		key, field = "e2e", &g.E2E
	case "":
		p.errorf(p.pos, "expected an objective name (ttft, tpot or e2e)")
		return
	default:
		p.errorf(keyAt, "unknown objective %q (want ttft, tpot or e2e)", key)
		return
	}
	if seen[key] {
		p.errorf(keyAt, "objective %s given twice", key)
		return
	}
	seen[key] = true
	p.skipSpace()
	if r, _ := p.peek(); r != ':' {
		p.errorf(p.pos, "expected %q after %s, then a latency such as 500ms", ":", key)
		return
	}
	p.pos++
	p.skipSpace()
	numAt := p.pos
	n, ok := p.number()
	if !ok {
		return
	}
	unitAt := p.pos // the unit must follow the number: a space separates objectives
	u, ok := p.unit()
	if !ok {
		return
	}
	if u == UnitPercent {
		p.errorf(unitAt, "%s is a latency: write it in ms, s or us, not %%", key)
		return
	}
	ns := math.Round(u.scale(n) * float64(time.Millisecond))
	switch {
	case ns > math.MaxInt64/2:
		p.errorf(numAt, "%s objective %s too large", key, strings.TrimSpace(p.in[numAt:p.pos]))
	case ns <= 0:
		p.errorf(numAt, "%s objective must be positive (at least 1ns)", key)
	default:
		*field = time.Duration(ns)
	}
}
