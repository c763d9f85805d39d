// Package labels parses label selectors as kubectl's -l and the API
// server read them: "app=vllm,tier!=cache", "env in (a,b)", "!canary",
// with the server's grammar and error messages.
package labels

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube/api/validation"
)

// Operator is the operator of a requirement.
type Operator string

// The operators.
const (
	DoesNotExist Operator = "!"
	Equals       Operator = "="
	DoubleEquals Operator = "=="
	In           Operator = "in"
	NotEquals    Operator = "!="
	NotIn        Operator = "notin"
	Exists       Operator = "exists"
	GreaterThan  Operator = "gt"
	LessThan     Operator = "lt"
)

// Requirement is one term of a selector.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string
}

// String writes r as a selector term.
func (r Requirement) String() string {
	switch r.Operator {
	case Exists:
		return r.Key
	case DoesNotExist:
		return "!" + r.Key
	case In, NotIn:
		return r.Key + " " + string(r.Operator) + " (" + strings.Join(r.Values, ",") + ")"
	case GreaterThan:
		return r.Key + ">" + r.Values[0]
	case LessThan:
		return r.Key + "<" + r.Values[0]
	}
	return r.Key + string(r.Operator) + r.Values[0]
}

// Matches reports whether labels ls meet r.
func (r Requirement) Matches(ls map[string]string) bool {
	v, ok := ls[r.Key]
	switch r.Operator {
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	case Equals, DoubleEquals, In:
		return ok && slices.Contains(r.Values, v)
	case NotEquals, NotIn:
		return !ok || !slices.Contains(r.Values, v)
	case GreaterThan, LessThan:
		if !ok {
			return false
		}
		got, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		return r.Operator == GreaterThan && got > want || r.Operator == LessThan && got < want
	}
	return false
}

// Selector is a parsed selector: every requirement must hold.
type Selector struct {
	reqs []Requirement
}

// Requirements returns the selector's terms, sorted by key.
func (s Selector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// Empty reports whether s selects everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 }

// String writes s as a selector.
func (s Selector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Matches reports whether labels ls meet every requirement of s.
func (s Selector) Matches(ls map[string]string) bool {
	for _, r := range s.reqs {
		if !r.Matches(ls) {
			return false
		}
	}
	return true
}

// Parse parses a selector.
func Parse(selector string) (Selector, error) {
	p := parser{toks: lex(selector)}
	var reqs []Requirement
	for {
		tok := p.peek()
		if tok.kind == tokEnd {
			break
		}
		r, err := p.requirement()
		if err != nil {
			return Selector{}, fmt.Errorf("unable to parse requirement: %w", err)
		}
		reqs = append(reqs, r)
		switch t := p.next(); t.kind {
		case tokEnd:
		case tokComma:
			if p.peek().kind == tokEnd || p.peek().kind == tokComma {
				return Selector{}, fmt.Errorf("found '%s', expected: identifier after ','", p.peek().text)
			}
			continue
		default:
			return Selector{}, fmt.Errorf("found '%s', expected: ',' or 'end of string'", t.text)
		}
		break
	}
	slices.SortStableFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	return Selector{reqs: reqs}, nil
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokIdent
	tokNot
	tokEq
	tokDoubleEq
	tokNotEq
	tokIn
	tokNotIn
	tokOpen
	tokClose
	tokComma
	tokGt
	tokLt
	tokError
)

type token struct {
	kind tokKind
	text string
}

const specials = "=!(),><"

func lex(s string) []token {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.IndexByte(specials, c) >= 0:
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "!=":
				toks, i = append(toks, token{tokNotEq, two}), i+2
				continue
			case "==":
				toks, i = append(toks, token{tokDoubleEq, two}), i+2
				continue
			}
			kind := map[byte]tokKind{'=': tokEq, '!': tokNot, '(': tokOpen, ')': tokClose, ',': tokComma, '>': tokGt, '<': tokLt}[c]
			toks, i = append(toks, token{kind, string(c)}), i+1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r"+specials, rune(s[j])) {
				j++
			}
			word := s[i:j]
			kind := tokIdent
			switch word {
			case "in":
				kind = tokIn
			case "notin":
				kind = tokNotIn
			}
			toks, i = append(toks, token{kind, word}), j
		}
	}
	return append(toks, token{tokEnd, ""})
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEnd {
		p.pos++
	}
	return t
}

func (p *parser) requirement() (Requirement, error) {
	t := p.next()
	op := Exists
	if t.kind == tokNot {
		op = DoesNotExist
		t = p.next()
		if t.kind != tokIdent {
			return Requirement{}, fmt.Errorf("found '%s', expected: identifier after '!'", t.text)
		}
	} else if t.kind != tokIdent {
		return Requirement{}, fmt.Errorf("found '%s', expected: !, identifier, or 'end of string'", t.text)
	}
	key := t.text
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return Requirement{}, fmt.Errorf("key: Invalid value: %q: %s", key, strings.Join(msgs, "; "))
	}
	if k := p.peek().kind; k == tokEnd || k == tokComma {
		return Requirement{Key: key, Operator: op}, nil
	}
	if op == DoesNotExist {
		return Requirement{}, fmt.Errorf("found '%s', expected: ',' or 'end of string' after '!%s'", p.peek().text, key)
	}
	o := p.next()
	switch o.kind {
	case tokEq:
		op = Equals
	case tokDoubleEq:
		op = DoubleEquals
	case tokNotEq:
		op = NotEquals
	case tokIn:
		op = In
	case tokNotIn:
		op = NotIn
	case tokGt:
		op = GreaterThan
	case tokLt:
		op = LessThan
	default:
		return Requirement{}, fmt.Errorf("found '%s', expected: in, notin, =, ==, !=, gt, lt", o.text)
	}
	var values []string
	if op == In || op == NotIn {
		if t := p.next(); t.kind != tokOpen {
			return Requirement{}, fmt.Errorf("found '%s' expected: '('", t.text)
		}
		for {
			t := p.next()
			switch t.kind {
			case tokClose:
				if len(values) == 0 {
					return Requirement{}, fmt.Errorf("for 'in', 'notin' operators, values set can't be empty")
				}
			case tokIdent:
				values = append(values, t.text)
				switch n := p.next(); n.kind {
				case tokComma:
					continue
				case tokClose:
				default:
					return Requirement{}, fmt.Errorf("found '%s', expected: ',' or ')'", n.text)
				}
			case tokComma:
				values = append(values, "")
				continue
			default:
				return Requirement{}, fmt.Errorf("found '%s', expected: ',', ')' or identifier", t.text)
			}
			break
		}
	} else {
		switch t := p.peek(); t.kind {
		case tokEnd, tokComma:
			values = []string{""}
		case tokIdent:
			values = []string{p.next().text}
		default:
			return Requirement{}, fmt.Errorf("found '%s', expected: identifier", t.text)
		}
		if op == GreaterThan || op == LessThan {
			if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
				return Requirement{}, fmt.Errorf("for 'Gt', 'Lt' operators, the value must be an integer")
			}
		}
	}
	for _, v := range values {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return Requirement{}, fmt.Errorf("values[0][%s]: Invalid value: %q: %s", key, v, strings.Join(msgs, "; "))
		}
	}
	slices.Sort(values)
	return Requirement{Key: key, Operator: op, Values: slices.Compact(values)}, nil
}

// SelectorFromSet returns the selector of labels set: each key equal to
// its value.
func SelectorFromSet(set map[string]string) Selector {
	var reqs []Requirement
	for k, v := range set {
		reqs = append(reqs, Requirement{Key: k, Operator: Equals, Values: []string{v}})
	}
	slices.SortFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	return Selector{reqs: reqs}
}
