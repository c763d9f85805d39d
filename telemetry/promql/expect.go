package promql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Op is a comparison operator of an expectation.
type Op string

// Operators, longest first where one is a prefix of another.
const (
	OpLE Op = "<="
	OpGE Op = ">="
	OpEQ Op = "=="
	OpNE Op = "!="
	OpLT Op = "<"
	OpGT Op = ">"
)

var ops = []Op{OpLE, OpGE, OpEQ, OpNE, OpLT, OpGT}

// Expect is a parsed expect string: Value Op Bound holds for a value.
type Expect struct {
	Op    Op
	Bound float64
}

// ParseExpect parses an expect string (see the package documentation).
func ParseExpect(s string) (Expect, error) {
	t := strings.TrimSpace(s)
	for _, op := range ops {
		rest, ok := strings.CutPrefix(t, string(op))
		if !ok {
			continue
		}
		num := strings.TrimSpace(rest)
		if num == "" {
			return Expect{}, fmt.Errorf("expect %q: no number after %s", s, op)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Expect{}, fmt.Errorf("expect %q: %q is not a finite number (units are not supported: write 0.5, not 500ms)", s, num)
		}
		return Expect{Op: op, Bound: v}, nil
	}
	return Expect{}, fmt.Errorf("expect %q: want an operator (< <= > >= == !=) and a number, e.g. \"< 0.5\"", s)
}

// Holds reports whether v satisfies the expectation.
func (e Expect) Holds(v float64) bool {
	switch e.Op {
	case OpLT:
		return v < e.Bound
	case OpLE:
		return v <= e.Bound
	case OpGT:
		return v > e.Bound
	case OpGE:
		return v >= e.Bound
	case OpEQ:
		return v == e.Bound
	case OpNE:
		return v != e.Bound
	}
	return false
}

// String writes the expectation back as "< 0.5".
func (e Expect) String() string {
	return string(e.Op) + " " + strconv.FormatFloat(e.Bound, 'g', -1, 64)
}
