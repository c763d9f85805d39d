// Package intstr holds IntOrString, a field that is a number or a name (a
// port).
package intstr

import (
	"encoding/json"
	"strconv"
)

// Type says which of the two an IntOrString holds.
type Type int

// The two kinds.
const (
	Int Type = iota
	String
)

// IntOrString is a number or a string, written as either in JSON.
type IntOrString struct {
	Type   Type
	IntVal int32
	StrVal string
}

// FromInt32 returns the number i.
func FromInt32(i int32) IntOrString { return IntOrString{Type: Int, IntVal: i} }

// FromInt returns the number i.
func FromInt(i int) IntOrString { return IntOrString{Type: Int, IntVal: int32(i)} }

// FromString returns the string s.
func FromString(s string) IntOrString { return IntOrString{Type: String, StrVal: s} }

// String returns v as a string.
func (v IntOrString) String() string {
	if v.Type == String {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON writes v as a number or a string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.Type == String {
		return json.Marshal(v.StrVal)
	}
	return json.Marshal(v.IntVal)
}

// UnmarshalJSON reads a number or a string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.Type = String
		return json.Unmarshal(b, &v.StrVal)
	}
	v.Type = Int
	return json.Unmarshal(b, &v.IntVal)
}
