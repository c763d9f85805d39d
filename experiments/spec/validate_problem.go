package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Severity says whether a Problem makes a spec invalid.
type Severity uint8

// Severities. A warning is worth reading but does not stop a run.
const (
	SeverityError Severity = iota
	SeverityWarning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Problem is one thing wrong with an experiment: where it is (the file, a
// 1-based line and column when known, and the key path such as
// faults[1].params.latency), what is wrong and what to do. Columns count
// characters (runes) from 1, as the YAML parser and editors do.
type Problem struct {
	File     string
	Line     int
	Col      int
	Path     string
	Msg      string
	Severity Severity
}

// Error returns "FILE:LINE:COL: PATH: MSG", with "warning: " before PATH
// for a warning and the parts that are unknown left out.
func (p Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
	}
	if p.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(max(p.Col, 1)))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

var (
	_ error = Problem{}
	_ error = Problems(nil)
)

// Problems is every problem found in an experiment, in a stable order: by
// position in the file, then by path. As an error it lists one problem per
// line.
type Problems []Problem

// Error returns one problem per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem as an error, for errors.As and errors.Is.
func (ps Problems) Unwrap() []error {
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

// Errors returns the problems of SeverityError.
func (ps Problems) Errors() Problems { return ps.filter(SeverityError) }

// Warnings returns the problems of SeverityWarning.
func (ps Problems) Warnings() Problems { return ps.filter(SeverityWarning) }

func (ps Problems) filter(s Severity) Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == s {
			out = append(out, p)
		}
	}
	return out
}

// Err returns ps as an error when it holds at least one error, else nil
// (warnings alone are not an error).
func (ps Problems) Err() error {
	if len(ps.Errors()) == 0 {
		return nil
	}
	return ps
}

// sort orders ps by line, column, path and message; problems without a
// position come first, in path order.
func (ps Problems) sort() {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Severity, b.Severity),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
}

// issue is a problem before it has a position: the key path, whether it is
// about the key itself rather than its value, and a byte offset into the
// value's (or key's) string where the problem is, -1 for none.
type issue struct {
	path   string
	key    bool
	offset int
	msg    string
	sev    Severity
}

// issues collects issues.
type issues []issue

func (is *issues) add(path, format string, args ...any) {
	*is = append(*is, issue{path: path, offset: -1, msg: fmt.Sprintf(format, args...)})
}

func (is *issues) warn(path, format string, args ...any) {
	*is = append(*is, issue{path: path, offset: -1, msg: fmt.Sprintf(format, args...), sev: SeverityWarning})
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
