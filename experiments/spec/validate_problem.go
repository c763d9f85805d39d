package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// sortProblems orders ps by line, column, path, warnings after errors,
// and message; problems without a position come first, in path order.
func sortProblems(ps field.Problems) {
	slices.SortStableFunc(ps, func(a, b field.Problem) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
			compareBool(a.Warning, b.Warning),
			cmp.Compare(a.Message(nil), b.Message(nil)),
		)
	})
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// problemAt is the problem of message msg, in the spec's own words (it
// names no field: the path says which), at path of file (line and col 0
// when unknown).
func problemAt(file string, line, col int, path, msg string, warn bool) field.Problem {
	p := field.Errorf(field.Path(path), "%s", msg)
	p.File, p.Line, p.Col, p.Warning = file, line, col, warn
	return p
}

// issue is a problem before it has a position: the key path, whether it is
// about the key itself rather than its value, and a byte offset into the
// value's (or key's) string where the problem is, -1 for none.
type issue struct {
	path   string
	key    bool
	offset int
	msg    string
	warn   bool
}

// issues collects issues.
type issues []issue

func (is *issues) add(path, format string, args ...any) {
	*is = append(*is, issue{path: path, offset: -1, msg: fmt.Sprintf(format, args...)})
}

func (is *issues) warn(path, format string, args ...any) {
	*is = append(*is, issue{path: path, offset: -1, msg: fmt.Sprintf(format, args...), warn: true})
}

// addKey reports a problem with the key at path itself.
func (is *issues) addKey(path, format string, args ...any) {
	*is = append(*is, issue{path: path, key: true, offset: -1, msg: fmt.Sprintf(format, args...)})
}

// addAt reports a problem at byte offset off of the string at path (its
// key's string when key is set).
func (is *issues) addAt(path string, key bool, off int, msg string) {
	*is = append(*is, issue{path: path, key: key, offset: off, msg: msg})
}

// Key paths. A path names a node of the document from its root:
// fields and map keys joined by dots (target.sim.replicas), list indexes in
// brackets (faults[1]), and map keys that are not plain words quoted in
// brackets (thresholds["ttft{phase:fault}"]).

// plainKey reports whether k is written as is in a path: a letter or '_'
// first, then letters, digits, '_' and '-'.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && (c == '-' || '0' <= c && c <= '9'):
		default:
			return false
		}
	}
	return true
}

// child returns the path of map key k under p.
func child(p, k string) string {
	if plainKey(k) {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	return p + "[" + strconv.Quote(k) + "]"
}

// index returns the path of list item i under p.
func index(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

// parentPath returns the path p is directly under ("" for a top key).
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		// Find the '[' that opens the last segment, skipping a quoted key.
		if strings.HasSuffix(p, `"]`) {
			for i := len(p) - 3; i >= 1; i-- {
				if p[i] == '"' && p[i-1] == '[' {
					if _, err := strconv.Unquote(p[i : len(p)-1]); err == nil {
						return p[:i-1]
					}
				}
			}
			return ""
		}
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
		return ""
	}
	i := strings.LastIndexAny(p, ".]")
	switch {
	case i < 0:
		return ""
	case p[i] == ']':
		return p[:i+1]
	}
	return p[:i]
}

// within reports whether path p is q or lies under it.
func within(p, q string) bool {
	if q == "" || p == q {
		return true
	}
	return strings.HasPrefix(p, q) && (p[len(q)] == '.' || p[len(q)] == '[')
}
