package spec

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// source is an experiment file's text split in lines, for mapping byte
// offsets inside a scalar's value back to the file's columns.
type source struct {
	lines []string
}

func newSource(data []byte) source {
	return source{lines: strings.Split(string(data), "\n")}
}

// offsetPos returns the position of the byte at offset off of the string
// value of n (off == len(value) is just past its end). It understands plain,
// single-quoted and double-quoted scalars written on one line; for others
// (blocks, multi-line flows, values not from the file) it returns n's own
// position.
func (s source) offsetPos(n *node, off int) pos {
	if n == nil || n.pos.line < 1 || n.pos.line > len(s.lines) || off < 0 {
		return posOf(n)
	}
	line := s.lines[n.pos.line-1]
	start := runeIndex(line, n.pos.col-1)
	if start < 0 {
		return n.pos
	}
	var cols []int // cols[i]: column of the value's byte i
	switch n.quote {
	case quotePlain:
		if !strings.HasPrefix(line[start:], n.text) {
			return n.pos
		}
		col := n.pos.col
		for _, r := range n.text {
			for range utf8.RuneLen(r) {
				cols = append(cols, col)
			}
			col++
		}
		cols = append(cols, col)
	case quoteSingle:
		cols = singleQuotedCols(line[start:], n.pos.col)
	case quoteDouble:
		cols = doubleQuotedCols(line[start:], n.pos.col)
	default:
		return n.pos
	}
	if len(cols) != len(n.text)+1 {
		// The scalar spans lines or did not decode as expected: better the
		// start of the value than a wrong column.
		return n.pos
	}
	off = min(off, len(n.text))
	return pos{line: n.pos.line, col: cols[off]}
}

func posOf(n *node) pos {
	if n == nil {
		return pos{}
	}
	return n.pos
}

// runeIndex returns the byte index of the rune at rune index ri of s, or
// -1 when s is shorter.
func runeIndex(s string, ri int) int {
	if ri < 0 {
		return -1
	}
	n := 0
	for i := range s {
		if n == ri {
			return i
		}
		n++
	}
	if n == ri {
		return len(s)
	}
	return -1
}

// singleQuotedCols maps each byte of the value of the single-quoted scalar
// that opens src (at column col) to its column, plus one entry for the
// closing quote. It returns nil when the scalar does not close on the line.
func singleQuotedCols(src string, col int) []int {
	if !strings.HasPrefix(src, "'") {
		return nil
	}
	var cols []int
	col++
	rest := src[1:]
	for len(rest) > 0 {
		r, size := utf8.DecodeRuneInString(rest)
		if r == '\'' {
			if strings.HasPrefix(rest, "''") {
				cols = append(cols, col)
				rest = rest[2:]
				col += 2
				continue
			}
			return append(cols, col)
		}
		for range size {
			cols = append(cols, col)
		}
		rest = rest[size:]
		col++
	}
	return nil
}

// doubleQuotedCols does for a double-quoted scalar what singleQuotedCols
// does; the bytes an escape sequence decodes to all map to its backslash.
func doubleQuotedCols(src string, col int) []int {
	if !strings.HasPrefix(src, `"`) {
		return nil
	}
	var cols []int
	col++
	rest := src[1:]
	for len(rest) > 0 {
		r, size := utf8.DecodeRuneInString(rest)
		switch r {
		case '"':
			return append(cols, col)
		case '\\':
			n, width := escapeLen(rest)
			if width == 0 {
				return nil
			}
			for range n {
				cols = append(cols, col)
			}
			col += utf8.RuneCountInString(rest[:width])
			rest = rest[width:]
			continue
		}
		for range size {
			cols = append(cols, col)
		}
		rest = rest[size:]
		col++
	}
	return nil
}

// escapeLen returns how many bytes the YAML escape at the start of s
// decodes to and how many bytes of s it takes; width 0 for an escape this
// mapping does not follow (a line continuation).
func escapeLen(s string) (n, width int) {
	if len(s) < 2 {
		return 0, 0
	}
	hex := 0
	switch s[1] {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case '0', 'a', 'b', 't', '\t', 'n', 'v', 'f', 'r', 'e', ' ', '"', '/', '\\':
		return 1, 2
	case 'N', '_':
		return 2, 2 // U+0085, U+00A0
	case 'L', 'P':
		return 3, 2 // U+2028, U+2029
	default:
		return 0, 0
	}
	if len(s) < 2+hex {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[2:2+hex], 16, 32)
	if err != nil {
		return 0, 0
	}
	if hex == 2 {
		// goccy decodes \xHH as the code point U+00HH.
		return utf8.RuneLen(rune(v)), 2 + hex
	}
	l := utf8.RuneLen(rune(v))
	if l < 0 {
		l = 3 // invalid code points decode to U+FFFD
	}
	return l, 2 + hex
}
