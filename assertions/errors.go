package assertions

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseError is a problem in a threshold or goodput text. It carries the
// input, the byte offset of the offending character and a message; Error
// quotes the input and points at the character with a caret:
//
//	threshold "ttft: p(99)<500xs": unknown unit "xs" (want ms, s or us)
//	    ttft: p(99)<500xs
//	                   ^
type ParseError struct {
	// What names the kind of input: "threshold" or "goodput".
	What string
	// Input is the text as given (for a config entry, "key: expression").
	Input string
	// Offset is the byte offset in Input of the character the problem is
	// at; len(Input) means the end of the input.
	Offset int
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error returns the message, the input on its own line and a caret line
// under the offending character.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.What)
	b.WriteByte(' ')
	b.WriteString(strconv.Quote(e.Input)) // keeps printable non-ASCII such as µ
	b.WriteString(": ")
	b.WriteString(e.Msg)
	line, caret := caretLines(e.Input, e.Offset)
	b.WriteString("\n    ")
	b.WriteString(line)
	b.WriteString("\n    ")
	b.WriteString(caret)
	b.WriteByte('^')
	return b.String()
}

// validAt reports whether s holds a valid encoding of U+FFFD at i (as
// opposed to a bad byte that decodes to RuneError).
func validAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 3
}

// caretLines returns the line of input that holds offset, made printable
// without shifting columns, and the padding that puts a caret under the
// character at offset. Tabs are kept in both so that they line up.
func caretLines(input string, offset int) (line, pad string) {
	offset = max(0, min(offset, len(input)))
	start := strings.LastIndexByte(input[:offset], '\n') + 1
	end := len(input)
	if i := strings.IndexByte(input[offset:], '\n'); i >= 0 {
		end = offset + i
	}
	var lb, pb strings.Builder
	for i, r := range input[start:end] {
		before := start+i < offset
		switch {
		case r == '\t':
			lb.WriteByte('\t')
			if before {
				pb.WriteByte('\t')
			}
			continue
		case r == utf8.RuneError && !validAt(input, start+i), !unicode.IsPrint(r):
			lb.WriteRune('\uFFFD')
		default:
			lb.WriteRune(r)
		}
		if before {
			pb.WriteByte(' ')
		}
	}
	return lb.String(), pb.String()
}

// ParseErrors returns every *ParseError in err's tree (errors.Join trees
// included), in order, so that a config loader can map each offset to a
// file position.
func ParseErrors(err error) []*ParseError {
	var out []*ParseError
	var walk func(error)
	walk = func(e error) {
		switch e := e.(type) {
		case nil:
		case *ParseError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
