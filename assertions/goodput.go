package assertions

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// GoodputSLO is the set of per-request service-level objectives that
// define goodput, as vLLM's benchmark `--goodput` does (after DistServe):
// goodput is the number of requests per second that succeeded and met every
// objective set. A zero field sets no objective.
type GoodputSLO struct {
	TTFT time.Duration // time to first token at most this
	TPOT time.Duration // time per output token at most this
	E2E  time.Duration // end-to-end latency at most this
}

// RequestLatency is what the goodput verdict on one finished request needs.
type RequestLatency struct {
	// Succeeded is true for a request answered in full (outcome ok).
	Succeeded bool
	// TTFT is valid when HasTTFT (a first content chunk arrived).
	TTFT    time.Duration
	HasTTFT bool
	// TPOT is valid when HasTPOT (more than one output token).
	TPOT    time.Duration
	HasTPOT bool
	E2E     time.Duration
}

// IsZero reports whether g sets no objective; then every successful
// request counts towards goodput.
func (g GoodputSLO) IsZero() bool { return g == GoodputSLO{} }

// Met reports whether a request counts towards goodput: it succeeded and
// meets every objective set (a latency equal to its objective meets it, as
// in vLLM). A request without a first token fails a TTFT objective. A
// request with one output token has no TPOT and meets a TPOT objective
// (vLLM counts its TPOT as 0).
func (g GoodputSLO) Met(l RequestLatency) bool {
	if !l.Succeeded {
		return false
	}
	if g.TTFT > 0 && (!l.HasTTFT || l.TTFT > g.TTFT) {
		return false
	}
	if g.TPOT > 0 && l.HasTPOT && l.TPOT > g.TPOT {
		return false
	}
	if g.E2E > 0 && l.E2E > g.E2E {
		return false
	}
	return true
}

// String returns the objectives in ParseGoodput's syntax,
// "ttft:500ms,tpot:50ms", or "" when none is set.
func (g GoodputSLO) String() string {
	var parts []string
	for _, kv := range []struct {
		k string
		d time.Duration
	}{{"ttft", g.TTFT}, {"tpot", g.TPOT}, {"e2e", g.E2E}} {
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
// Every problem is returned, joined, each a *ParseError pointing into s.
func ParseGoodput(s string) (GoodputSLO, error) {
	p := &parser{what: "goodput", in: s}
	var g GoodputSLO
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
		return GoodputSLO{}, err
	}
	return g, nil
}

// goodputPair reads `key ":" value [unit]` into g.
func (p *parser) goodputPair(g *GoodputSLO, seen map[string]bool) {
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
