package assertions

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Parse reads one threshold in the flag form: a key, a colon and one or
// more expressions separated by commas, as `--threshold` takes it:
//
//	ttft: p(99)<500ms
//	ttft{phase:baseline}: p(99)<500ms, p(50)<200ms
//
// It returns one Threshold per expression. Every problem found is
// returned, joined, each a *ParseError pointing into s.
//
// # Grammar
//
// The grammar is k6's, written out in BNF as k6's thresholds_parser.go
// does, with llmchaos's extensions marked (+):
//
//	threshold   ::= ws key ws ":" ws expr_list ws        (flag form)
//	key         ::= metric [ ws "{" ws [ tag_list ws ] "}" ]
//	metric      ::= name                                  (one of Metrics)
//	name        ::= ident_char { ident_char }
//	ident_char  ::= letter | digit | "_"
//	tag_list    ::= tag { ws "," ws tag }
//	tag         ::= tag_key ws ":" ws tag_value
//	tag_key     ::= "phase" | "fault" | "class" | "endpoint" | "scenario" | "name"
//	              | name                                  (ParseScript: any tag)
//	tag_value   ::= bare | dquoted | squoted             (+ quoting)
//	bare        ::= bare_char { bare_char }               (trailing ws trimmed)
//	bare_char   ::= any character but "," "{" "}" '"' "'"
//	dquoted     ::= '"' Go string literal body '"'        (strconv.Unquote)
//	squoted     ::= "'" { any character but "'" } "'"
//	expr_list   ::= expr { ws "," ws expr }              (+ several per flag)
//	expr        ::= aggregation ws operator ws number [ ws unit ]
//	aggregation ::= "avg" | "min" | "max" | "med" | percentile
//	              | "count" | "rate" | "value"
//	percentile  ::= "p" ws "(" ws number ws ")"           (0 <= number <= 100)
//	operator    ::= "<" | "<=" | ">" | ">=" | "==" | "===" | "!="
//	number      ::= digit { digit } [ "." { digit } ] | "." digit { digit }
//	unit        ::= "ms" | "s" | "us" | "µs" | "μs" | "%"  (+ us, µs, %)
//	ws          ::= { " " | "\t" | "\n" | "\r" }
//
// "name" is k6's request-name tag; llmchaos records it as the class, so
// {name:X} selects what {class:X} selects.
// Numbers have no sign and no exponent. `===` is k6's synonym of `==`.
// A unit may be separated from its number by spaces ("500 ms"); a word
// there that is not a unit is read as the start of a next expression that
// lacks its comma, and reported as such.
//
// The config form writes the key once and each expression on its own, or
// as the object {threshold, abortOnFail, delayAbortEval} (see Entry):
//
//	thresholds:
//	  ttft{phase:baseline}: ["p(99)<500ms", "med<200ms"]
//	  error_rate: [{threshold: "rate<0.01", abortOnFail: true, delayAbortEval: 10s}]
//
// Beyond the syntax, an expression must fit its metric's Kind:
//
//   - durations (ttft, itl, tpot, e2e, send_lag, client_queue, connect, recovery_time,
//     oom_recovery_time) take avg min max med p(N), and count (+: the number
//     of samples); a plain bound is in milliseconds as in k6, or give ms, s
//     or us (µs). count takes a plain number. "m" is refused: milli to some,
//     minutes to others.
//   - token distributions (input_tokens, output_tokens) take the same
//     aggregations with plain numbers.
//   - rates (error_rate, ...) take rate only, with a fraction from 0 to 1 or
//     a percentage with %: rate<0.01 and rate<1% are the same.
//   - counters (requests, requests_lost) take count, or rate meaning events
//     per second as in k6; plain numbers.
//   - per-second values (goodput, output_tokens_per_s, requests_per_s) take
//     value; plain numbers.
//
// Tags select phase (baseline, fault, recovery, after), fault (a fault's
// name), class (a request class) and endpoint (a base URL, quoted when it
// holds a comma or a brace).
func Parse(s string) ([]Threshold, error) { return ParseIn(nil, s) }

// ParseIn is Parse with the metrics of reg (the built-ins and the custom
// metrics registered in it); a nil reg knows the built-ins only.
func ParseIn(reg *metrics.Registry, s string) ([]Threshold, error) { return parseIn(reg, s, false) }

// ParseScript is ParseIn for a k6 script's thresholds: a tag selection may
// name any tag (k6's system tags such as method, status, expected_response,
// group or check, and the script's own), and the thresholds judge a
// selection without samples as k6 does (see Evaluate).
func ParseScript(reg *metrics.Registry, s string) ([]Threshold, error) { return parseIn(reg, s, true) }

// parseIn is ParseIn, for a script's threshold with k6.
func parseIn(reg *metrics.Registry, s string, k6 bool) ([]Threshold, error) {
	return parseAs("threshold", reg, s, k6)
}

// parseAs is parseIn with the thresholds named what in messages.
func parseAs(what string, reg *metrics.Registry, s string, k6 bool) ([]Threshold, error) {
	p := &parser{what: what, in: s, reg: reg, k6: k6}
	m, known, tags, ok := p.key()
	if !ok {
		return nil, p.err()
	}
	p.skipSpace()
	if r, _ := p.peek(); r != ':' {
		p.errorf(p.pos, "expected %q after the metric and its tags, then expressions such as p(99)<500ms", ":")
		return nil, p.err()
	}
	p.pos++
	exprs := p.exprList(m, known)
	if err := p.err(); err != nil {
		return nil, err
	}
	ths := thresholds(m, tags, exprs)
	for i := range ths {
		ths[i].k6 = k6
	}
	return ths, nil
}

// ParseFlags parses each of flags with Parse (one `--threshold` each) and
// returns all thresholds in order, or every problem in every flag, joined.
func ParseFlags(flags []string) ([]Threshold, error) { return ParseFlagsAs("threshold", flags) }

// ParseFlagsAs is ParseFlags for a flag whose thresholds its messages
// call what (llmchaos capacity's --slo).
func ParseFlagsAs(what string, flags []string) ([]Threshold, error) {
	var (
		all  []Threshold
		errs []error
	)
	for _, f := range flags {
		ths, err := parseAs(what, nil, f, false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, ths...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return all, nil
}

// ParseKey reads a config key, `metric{tag:value,...}`, alone.
func ParseKey(key string) (metric string, tags Tags, err error) { return ParseKeyIn(nil, key) }

// ParseKeyIn is ParseKey with the metrics of reg (see ParseIn).
func ParseKeyIn(reg *metrics.Registry, key string) (metric string, tags Tags, err error) {
	p := &parser{what: "threshold", in: key, reg: reg}
	m, _, tags, ok := p.key()
	if ok {
		p.skipSpace()
		if r, _ := p.peek(); r != eof {
			p.errorf(p.pos, "unexpected %q after the metric and its tags", r)
		}
	}
	if err := p.err(); err != nil {
		return "", Tags{}, err
	}
	return m.Name, tags, nil
}

// thresholds pairs each expression with the metric and tags.
func thresholds(m Metric, tags Tags, exprs []Expr) []Threshold {
	out := make([]Threshold, len(exprs))
	for i, e := range exprs {
		out[i] = Threshold{Metric: m.Name, Tags: tags, Expr: e}
		if _, builtin := LookupMetric(m.Name); !builtin {
			out[i].kind = m.Kind // a custom metric: Evaluate cannot look it up
		}
	}
	return out
}

// eof is what peek returns at the end of the input.
const eof = -1

// parser reads one threshold text. It records every problem it can find
// and resynchronises at the next "," rather than stopping at the first.
type parser struct {
	what string // "threshold" or "goodput", for ParseError.What
	in   string
	pos  int
	errs []error
	reg  *metrics.Registry // nil: built-in metrics only
	k6   bool              // a script's threshold: any tag key is a tag
}

func (p *parser) errorf(at int, format string, args ...any) {
	p.errs = append(p.errs, &ParseError{What: p.what, Input: p.in, Offset: at, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems found so far, joined, or nil.
func (p *parser) err() error { return errors.Join(p.errs...) }

// peek returns the rune at pos and its size; eof at the end. A byte that
// is not valid UTF-8 is returned as utf8.RuneError of size 1.
func (p *parser) peek() (rune, int) {
	if p.pos >= len(p.in) {
		return eof, 0
	}
	return utf8.DecodeRuneInString(p.in[p.pos:])
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func (p *parser) skipSpace() {
	for p.pos < len(p.in) && isSpace(rune(p.in[p.pos])) {
		p.pos++
	}
}

// word reads a run of runes for which ok holds and returns it.
func (p *parser) word(ok func(rune) bool) string {
	start := p.pos
	for {
		r, n := p.peek()
		if r == eof || !ok(r) {
			break
		}
		p.pos += n
	}
	return p.in[start:p.pos]
}

func isIdent(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// key reads `metric [ "{" tags "}" ]`. known is false for a metric name
// that is not in Metrics (already reported); ok is false when the text is
// too broken to go on.
func (p *parser) key() (m Metric, known bool, tags Tags, ok bool) {
	p.skipSpace()
	start := p.pos
	name := p.word(isIdent)
	if name == "" {
		p.errorf(p.pos, "expected a metric name such as ttft or error_rate")
		return Metric{}, false, Tags{}, false
	}
	m, known = lookupIn(p.reg, name)
	if !known {
		m.Name = name
		if s := suggestMetric(name); s != "" {
			p.errorf(start, "unknown metric %q (did you mean %q?)", name, s)
		} else {
			p.errorf(start, "unknown metric %q (want one of %s)", name, metricNames())
		}
	}
	p.skipSpace()
	if r, _ := p.peek(); r == '{' {
		tags, ok = p.tags()
		return m, known, tags, ok
	}
	return m, known, Tags{}, true
}

// metricNames lists every metric name, for error messages.
func metricNames() string {
	ms := Metrics()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// tags reads `"{" [ tag { "," tag } ] "}"` starting at the brace; a
// script's tags other than the fields' go to Extra.
func (p *parser) tags() (Tags, bool) {
	extra := map[string]string{}
	tags, ok := p.tagList(extra)
	tags.Extra = recording.ExtraTags(extra)
	return tags, ok
}

// tagList is tags, with the other tags put in extra.
func (p *parser) tagList(extra map[string]string) (Tags, bool) {
	var (
		tags Tags
		seen = map[string]bool{}
	)
	p.pos++ // "{"
	p.skipSpace()
	if r, _ := p.peek(); r == '}' {
		p.pos++
		return tags, true
	}
	for {
		p.skipSpace()
		keyAt := p.pos
		key := p.word(isIdent)
		good := true
		switch {
		case key == "":
			p.errorf(p.pos, "expected a tag name (phase, fault, class, endpoint or scenario)")
			good = false
		case tags.field(key) == nil && !p.k6:
			p.errorf(keyAt, "unknown tag %q (want phase, fault, class, endpoint or scenario)", key)
		case seen[key]:
			p.errorf(keyAt, "tag %q given twice", key)
		}
		seen[key] = true
		if good {
			p.skipSpace()
			if r, _ := p.peek(); r != ':' {
				p.errorf(p.pos, "expected %q after tag %q", ":", key)
				good = false
			} else {
				p.pos++
				p.skipSpace()
			}
		}
		if good {
			valueAt := p.pos
			value, vok := p.tagValue()
			good = vok
			switch {
			case !vok:
			case p.pos == len(p.in):
				// The value ran to the end: the missing "}" is the problem.
			case key == "phase" && !isPhase(value):
				p.errorf(valueAt, "unknown phase %q (want baseline, fault, recovery or after)", value)
			case tags.field(key) != nil && *tags.field(key) == "":
				*tags.field(key) = value
			case tags.field(key) == nil && p.k6:
				extra[key] = value
			}
			p.skipSpace()
		}
		// Resynchronise at the next "," or "}" after a problem.
		for {
			r, n := p.peek()
			switch r {
			case ',':
				p.pos++
			case '}':
				p.pos++
				return tags, true
			case eof:
				if good {
					p.errorf(p.pos, "missing %q to close the tag list", "}")
				}
				return tags, false
			default:
				if good {
					p.errorf(p.pos, "expected %q or %q after the tag value, found %q", ",", "}", r)
					good = false
				}
				if r == '"' || r == '\'' {
					p.skipQuoted(r)
				} else {
					p.pos += n
				}
				continue
			}
			break
		}
	}
}

func isPhase(s string) bool {
	for _, ph := range Phases() {
		if s == ph {
			return true
		}
	}
	return false
}

// skipQuoted moves past the quoted string starting at pos (or to the end
// when it is unterminated) and reports whether it was terminated.
func (p *parser) skipQuoted(q rune) bool {
	i := p.pos + 1
	for i < len(p.in) {
		switch c := p.in[i]; {
		case c == '\\' && q == '"':
			i += 2
			continue
		case rune(c) == q:
			p.pos = i + 1
			return true
		}
		i++
	}
	p.pos = len(p.in)
	return false
}

// tagValue reads a bare, double-quoted or single-quoted tag value.
func (p *parser) tagValue() (string, bool) {
	start := p.pos
	r, _ := p.peek()
	switch r {
	case '"', '\'':
		if !p.skipQuoted(r) {
			p.errorf(start, "unterminated quoted tag value")
			return "", false
		}
		lit := p.in[start:p.pos]
		v := lit[1 : len(lit)-1]
		if r == '"' {
			var err error
			if v, err = strconv.Unquote(lit); err != nil {
				p.errorf(start, "bad quoted tag value %s (use Go string escapes such as \\\" and \\\\)", lit)
				return "", false
			}
		}
		if v == "" {
			p.errorf(start, "empty tag value")
			return "", false
		}
		return v, true
	}
	v := p.word(func(r rune) bool { return !strings.ContainsRune(`,{}"'`, r) })
	v = strings.TrimRightFunc(v, isSpace)
	if v == "" {
		p.errorf(start, "expected a tag value")
		return "", false
	}
	return v, true
}

// exprList reads `expr { "," expr }` to the end of the input.
func (p *parser) exprList(m Metric, known bool) []Expr {
	var exprs []Expr
	for {
		before := len(p.errs)
		p.skipSpace()
		if r, _ := p.peek(); r == eof || r == ',' {
			p.errorf(p.pos, "expected an expression such as p(99)<500ms or rate<0.01")
		} else if e, ok := p.expr(m, known); ok {
			exprs = append(exprs, e)
		}
		p.skipSpace()
		// Resynchronise at the next "," after a problem.
		reported := false
		for {
			r, n := p.peek()
			if r == eof {
				return exprs
			}
			if r == ',' {
				p.pos++
				break
			}
			if !reported && len(p.errs) == before {
				p.errorf(p.pos, "unexpected %q after the expression (separate expressions with %q)", r, ",")
			}
			reported = true
			p.pos += n
		}
	}
}

// expr reads `aggregation op number [unit]` and checks it against m.
func (p *parser) expr(m Metric, known bool) (Expr, bool) {
	nerr := len(p.errs)
	var e Expr
	aggAt := p.pos
	switch w := p.word(func(r rune) bool { return r < utf8.RuneSelf && unicode.IsLetter(r) }); w {
	case "avg":
		e.Agg = AggAvg
	case "min":
		e.Agg = AggMin
	case "max":
		e.Agg = AggMax
	case "med":
		e.Agg = AggMed
	case "count":
		e.Agg = AggCount
	case "rate":
		e.Agg = AggRate
	case "value":
		e.Agg = AggValue
	case "p":
		e.Agg = AggPercentile
		p.skipSpace()
		if r, _ := p.peek(); r != '(' {
			p.errorf(p.pos, "expected %q after p: write a percentile as p(99)", "(")
			return Expr{}, false
		}
		p.pos++
		p.skipSpace()
		pAt := p.pos
		n, ok := p.number()
		if !ok {
			return Expr{}, false
		}
		if n > 100 {
			p.errorf(pAt, "percentile %s out of range (want 0 to 100)", formatNum(n))
		}
		e.P = n
		p.skipSpace()
		if r, _ := p.peek(); r != ')' {
			p.errorf(p.pos, "expected %q to close p(", ")")
			return Expr{}, false
		}
		p.pos++
	case "":
		p.errorf(p.pos, "expected an aggregation (avg, min, max, med, p(N), count, rate or value)")
		return Expr{}, false
	default:
		p.errorf(aggAt, "unknown aggregation %q (want avg, min, max, med, p(N), count, rate or value)", w)
		return Expr{}, false
	}
	aggText := p.in[aggAt:p.pos]

	p.skipSpace()
	var ok bool
	if e.Op, ok = p.operator(); !ok {
		return Expr{}, false
	}

	p.skipSpace()
	numAt := p.pos
	if e.Num, ok = p.number(); !ok {
		return Expr{}, false
	}

	// A unit may follow the number after spaces, but only a known one:
	// in "5 p(50)<1" the p starts a (badly separated) expression.
	unitAt := p.pos
	p.skipSpace()
	if p.pos > unitAt && !p.atUnit() {
		p.pos = unitAt
	}
	unitAt = p.pos
	if e.Unit, ok = p.unit(); !ok {
		return Expr{}, false
	}
	if math.IsInf(e.Bound(), 0) {
		p.errorf(numAt, "number %s too large", p.in[numAt:unitAt])
	}

	if known {
		p.check(m, e, aggAt, aggText, numAt, unitAt)
	}
	return e, len(p.errs) == nerr
}

// operator reads one of < <= > >= == === !=.
func (p *parser) operator() (Op, bool) {
	at := p.pos
	next := func(c byte) bool {
		if p.pos < len(p.in) && p.in[p.pos] == c {
			p.pos++
			return true
		}
		return false
	}
	switch {
	case next('<'):
		if next('=') {
			return OpLE, true
		}
		return OpLT, true
	case next('>'):
		if next('=') {
			return OpGE, true
		}
		return OpGT, true
	case next('='):
		if next('=') {
			next('=') // k6's ===
			return OpEQ, true
		}
		p.errorf(at, "%q is not an operator (use == to compare for equality)", "=")
		return 0, false
	case next('!'):
		if next('=') {
			return OpNE, true
		}
		p.errorf(at, "%q is not an operator (use != for inequality)", "!")
		return 0, false
	}
	p.errorf(at, "expected an operator (<, <=, >, >=, == or !=)")
	return 0, false
}

// number reads `digits [ "." digits ]` or `"." digits`.
func (p *parser) number() (float64, bool) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	n := digits()
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		n += digits()
	}
	if n == 0 {
		p.pos = start
		if r, _ := p.peek(); r == '-' || r == '+' {
			p.errorf(start, "expected a number without a sign")
		} else {
			p.errorf(start, "expected a number")
		}
		return 0, false
	}
	v, err := strconv.ParseFloat(p.in[start:p.pos], 64)
	if err != nil { // only a range error can get here
		p.errorf(start, "number %s too large", p.in[start:p.pos])
		return 0, false
	}
	return v, true
}

// atUnit reports whether a unit word (known or refused, not a typo) or %
// is at pos.
func (p *parser) atUnit() bool {
	if r, _ := p.peek(); r == '%' {
		return true
	}
	start := p.pos
	w := p.word(unicode.IsLetter)
	p.pos = start
	switch w {
	case "us", "µs", "μs", "ms", "s", "m", "min":
		return true
	}
	return false
}

// unit reads an optional unit after a number.
func (p *parser) unit() (Unit, bool) {
	at := p.pos
	if r, _ := p.peek(); r == '%' {
		p.pos++
		return UnitPercent, true
	}
	switch w := p.word(unicode.IsLetter); w {
	case "":
		return UnitNone, true
	case "us", "µs", "μs":
		return UnitMicro, true
	case "ms":
		return UnitMilli, true
	case "s":
		return UnitSecond, true
	case "m", "min":
		p.errorf(at, "unit %q is not accepted (minutes or milli?): write 60s for a minute, 1ms for a millisecond", w)
		return "", false
	default:
		p.errorf(at, "unknown unit %q (want ms, s or us)", w)
		return "", false
	}
}

// check reports an expression that does not fit its metric's kind.
func (p *parser) check(m Metric, e Expr, aggAt int, aggText string, numAt, unitAt int) {
	if !m.Kind.accepts(e.Agg) {
		names := make([]string, 0, 6)
		for _, a := range m.Kind.aggs() {
			if a == AggPercentile {
				names = append(names, "p(N)")
			} else {
				names = append(names, a.String())
			}
		}
		p.errorf(aggAt, "aggregation %q does not apply to %s (%s): want %s", aggText, m.Name, describe(m), orList(names))
		return
	}
	switch {
	case m.Kind == KindDuration && e.Agg != AggCount:
		if e.Unit == UnitPercent {
			p.errorf(unitAt, "%s is a duration: write the bound in ms, s or us, not %%", m.Name)
		}
	case m.Kind == KindRate:
		if e.Unit != UnitNone && e.Unit != UnitPercent {
			p.errorf(unitAt, "%s is a fraction from 0 to 1: write rate<0.01 or rate<1%%, not a unit %q", m.Name, e.Unit)
		} else if b := e.Bound(); b < 0 || b > 1 {
			p.errorf(numAt, "rate %s%s out of range: a rate is a fraction from 0 to 1 (write %s%% for a percentage)",
				formatNum(e.Num), e.Unit, formatNum(e.Num))
		}
	default:
		if e.Unit != UnitNone {
			what := m.Name
			if e.Agg == AggCount {
				what = "count of " + m.Name
			}
			p.errorf(unitAt, "%s takes a plain number (%s), not a unit %q", what, plainUnit(m, e.Agg), e.Unit)
		}
	}
}

// describe says what a metric is, for error messages.
func describe(m Metric) string {
	switch m.Kind {
	case KindDuration:
		return "a duration in ms"
	case KindDistribution:
		return "a distribution of " + m.Unit
	case KindRate:
		return "a rate from 0 to 1"
	case KindCounter:
		return "a counter"
	case KindValue:
		return "a per-second value"
	}
	return "unknown"
}

// plainUnit names what a plain bound on m with agg counts.
func plainUnit(m Metric, agg Agg) string {
	switch {
	case agg == AggCount && m.Kind != KindCounter:
		return "samples"
	case m.Kind == KindCounter && agg == AggRate:
		return m.Unit + " per second"
	case m.Kind == KindValue:
		return "per second"
	}
	return m.Unit
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
