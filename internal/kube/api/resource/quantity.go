// Package resource holds Quantity, an amount of a resource as Kubernetes
// writes it: "1", "500Mi", "1.5", "100m", "2e3".
package resource

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// Quantity is an amount of a resource. It keeps the text it was given (or
// that the server sent), which is how the API writes it back.
type Quantity struct {
	s string
	v *big.Rat
}

var suffixes = map[string]*big.Rat{
	"n": big.NewRat(1, 1e9), "u": big.NewRat(1, 1e6), "m": big.NewRat(1, 1e3), "": big.NewRat(1, 1),
	"k": big.NewRat(1e3, 1), "M": big.NewRat(1e6, 1), "G": big.NewRat(1e9, 1), "T": big.NewRat(1e12, 1),
	"P": big.NewRat(1e15, 1), "E": big.NewRat(1e18, 1),
	"Ki": big.NewRat(1<<10, 1), "Mi": big.NewRat(1<<20, 1), "Gi": big.NewRat(1<<30, 1),
	"Ti": big.NewRat(1<<40, 1), "Pi": big.NewRat(1<<50, 1), "Ei": big.NewRat(1<<60, 1),
}

// ParseQuantity parses s: a signed decimal number followed by a binary
// (Ki, Mi, ...) or decimal (m, k, M, ...) suffix or an exponent (e3).
func ParseQuantity(s string) (Quantity, error) {
	str := strings.TrimSpace(s)
	if str == "" {
		return Quantity{}, fmt.Errorf("quantity %q: empty", s)
	}
	end := 0
	for end < len(str) && strings.IndexByte("+-0123456789.", str[end]) >= 0 {
		end++
	}
	num, suffix := str[:end], str[end:]
	if num == "" || num == "+" || num == "-" || strings.Count(num, ".") > 1 || strings.LastIndexAny(num, "+-") > 0 {
		return Quantity{}, fmt.Errorf("quantity %q: not a number followed by a unit", s)
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return Quantity{}, fmt.Errorf("quantity %q: not a number followed by a unit", s)
	}
	if mult, ok := suffixes[suffix]; ok {
		v.Mul(v, mult)
	} else if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		exp, ok := new(big.Rat).SetString("1" + suffix)
		if !ok {
			return Quantity{}, fmt.Errorf("quantity %q: bad exponent %q", s, suffix)
		}
		v.Mul(v, exp)
	} else {
		return Quantity{}, fmt.Errorf("quantity %q: unknown unit %q (use Ki, Mi, Gi, m, k, M, G, ...)", s, suffix)
	}
	return Quantity{s: str, v: v}, nil
}

// MustParse parses s, which must be a valid quantity (a constant of the
// caller's); it panics otherwise.
func MustParse(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// String returns q as it was written; "0" for the zero Quantity.
func (q Quantity) String() string {
	if q.s == "" {
		return "0"
	}
	return q.s
}

// IsZero reports whether q is zero.
func (q Quantity) IsZero() bool { return q.v == nil || q.v.Sign() == 0 }

// Value returns q rounded up to an integer.
func (q Quantity) Value() int64 { return ceil(q.v, 1) }

// MilliValue returns q in thousandths, rounded up.
func (q Quantity) MilliValue() int64 { return ceil(q.v, 1000) }

// Cmp compares q with o: -1, 0 or +1.
func (q Quantity) Cmp(o Quantity) int { return rat(q.v).Cmp(rat(o.v)) }

func rat(v *big.Rat) *big.Rat {
	if v == nil {
		return new(big.Rat)
	}
	return v
}

func ceil(v *big.Rat, scale int64) int64 {
	r := new(big.Rat).Mul(rat(v), big.NewRat(scale, 1))
	n, d := r.Num(), r.Denom()
	q, m := new(big.Int).DivMod(n, d, new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// MarshalJSON writes q as a string.
func (q Quantity) MarshalJSON() ([]byte, error) { return json.Marshal(q.String()) }

// UnmarshalJSON reads a quantity written as a string or a number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	if s == "null" {
		*q = Quantity{}
		return nil
	}
	p, err := ParseQuantity(s)
	if err != nil {
		return err
	}
	*q = p
	return nil
}
