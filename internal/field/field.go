// Package field names the fields of a configuration and the problems found
// in them. A validation rule lives in the package that owns the setting
// and reports a Problem keyed by the field's Path (workload.rate,
// faults[1].params.latency); each front end names the field its own way
// when it shows the problem: a YAML file by its key and file:line:col, the
// flags of llmchaos load by the flag (--rate), a script by its option's
// name. Messages mention other fields as Path arguments, which the front
// end names the same way, so no front end translates another's words.
package field

import (
	"fmt"
	"strconv"
	"strings"
)

// Path names a field from the root of a configuration: keys joined by
// dots (target.sim.replicas), list indexes in brackets (faults[1]). The
// zero Path is the configuration as a whole.
type Path string

// Key returns the path of key k under p.
func (p Path) Key(k string) Path {
	if p == "" {
		return Path(k)
	}
	return p + "." + Path(k)
}

// Index returns the path of list item i under p.
func (p Path) Index(i int) Path { return p + "[" + Path(strconv.Itoa(i)) + "]" }

// Under returns p as a path under root (root.p); the zero p is root.
func (p Path) Under(root Path) Path {
	switch {
	case root == "":
		return p
	case p == "":
		return root
	case strings.HasPrefix(string(p), "["):
		return root + p
	}
	return root + "." + p
}

// String returns the path as written.
func (p Path) String() string { return string(p) }

// Namer names a field as a front end shows it to people: --rate for the
// flag that sets rate, input_tokens for a YAML key.
type Namer func(Path) string

// Plain names a field by its path.
func Plain(p Path) string { return string(p) }

// Problem is one thing wrong with a configuration, keyed by the field it
// is about, and, when a front end read the configuration from a file,
// placed in it. Its message is Format with Args; the Args that are a Path
// are fields the message mentions and are named by the front end's Namer.
// It is the one problem type of every front end: a load flag's, a fault's
// params', an experiment or suite file's (placed at FILE:LINE:COL).
type Problem struct {
	// Path is the field the problem is about ("": the whole
	// configuration).
	Path Path
	// Format and Args make the message; a Path in Args is a field.
	Format string
	Args   []any
	// Warning marks a problem worth reading that does not stop a run.
	Warning bool
	// Missing marks a required field that was not set: a front end may
	// say instead what to choose.
	Missing bool
	// File, Line and Col place the problem in the file the configuration
	// was read from ("" and 0 when unknown). Line and Col count from 1,
	// Col in characters (runes), as editors do.
	File      string
	Line, Col int
}

// Errorf returns the problem of field p: format and args as fmt.Sprintf,
// except that each Path in args is a field named by the front end.
func Errorf(p Path, format string, args ...any) Problem {
	return Problem{Path: p, Format: format, Args: args}
}

// Message returns the problem's message, with each field it mentions
// named by name (Plain when nil).
func (p Problem) Message(name Namer) string {
	if name == nil {
		name = Plain
	}
	args := make([]any, len(p.Args))
	for i, a := range p.Args {
		if f, ok := a.(Path); ok {
			args[i] = name(f)
		} else {
			args[i] = a
		}
	}
	// %w marks a wrapped cause (see Unwrap); as text it is %v.
	return fmt.Sprintf(strings.ReplaceAll(p.Format, "%w", "%v"), args...)
}

// Error returns the problem on one line, "FILE:LINE:COL: warning: PATH:
// MESSAGE", fields named by their paths: the parts of its place that are
// known, "warning: " for a warning, and the field's path when the message
// does not name the field itself.
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
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
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Path != "" && !p.names(p.Path) {
		b.WriteString(string(p.Path))
		b.WriteString(": ")
	}
	b.WriteString(p.Message(nil))
	return b.String()
}

// names reports whether the message names field f.
func (p Problem) names(f Path) bool {
	for _, a := range p.Args {
		if g, ok := a.(Path); ok && g == f {
			return true
		}
	}
	return false
}

// Unwrap returns the errors among the message's arguments (a cause
// wrapped with %w).
func (p Problem) Unwrap() []error {
	var out []error
	for _, a := range p.Args {
		if e, ok := a.(error); ok {
			out = append(out, e)
		}
	}
	return out
}

// Under returns p with its path, and the paths of the fields it
// mentions, under root.
func (p Problem) Under(root Path) Problem {
	q := p
	q.Path = p.Path.Under(root)
	q.Args = make([]any, len(p.Args))
	for i, a := range p.Args {
		if f, ok := a.(Path); ok {
			a = f.Under(root)
		}
		q.Args[i] = a
	}
	return q
}

// Problems is every problem found, in the order found.
type Problems []Problem

// Add appends the problem of field p (see Errorf).
func (ps *Problems) Add(p Path, format string, args ...any) {
	*ps = append(*ps, Errorf(p, format, args...))
}

// AddNamed appends the problem of field p whose message opens with the
// field's name as the front end names it; format is what follows the
// name (": %v, want more than 0").
func (ps *Problems) AddNamed(p Path, format string, args ...any) {
	*ps = append(*ps, Errorf(p, "%s"+format, append([]any{p}, args...)...))
}

// Err returns ps as an error when it holds at least one problem that is
// not a warning, else nil (warnings alone are not an error).
func (ps Problems) Err() error {
	for _, p := range ps {
		if !p.Warning {
			return ps
		}
	}
	return nil
}

// Errors returns the problems that are not warnings.
func (ps Problems) Errors() Problems { return ps.filter(false) }

// Warnings returns the warnings.
func (ps Problems) Warnings() Problems { return ps.filter(true) }

func (ps Problems) filter(warning bool) Problems {
	var out Problems
	for _, p := range ps {
		if p.Warning == warning {
			out = append(out, p)
		}
	}
	return out
}

// Error returns the problems, one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem as an error.
func (ps Problems) Unwrap() []error {
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

// Under returns every problem under root (see Problem.Under).
func (ps Problems) Under(root Path) Problems {
	out := make(Problems, len(ps))
	for i, p := range ps {
		out[i] = p.Under(root)
	}
	return out
}

// Of returns the field problems in err: err's own when it is a Problems
// or a Problem, those of the errors it joins, in order, and those a
// wrapper holds when it holds nothing else. An error that is none of these
// (a plain error of another layer) is returned in rest.
func Of(err error) (ps Problems, rest []error) {
	if err == nil {
		return nil, nil
	}
	switch e := err.(type) {
	case Problems:
		return e, nil
	case Problem:
		return Problems{e}, nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, x := range j.Unwrap() {
			xp, xr := Of(x)
			ps = append(ps, xp...)
			rest = append(rest, xr...)
		}
		return ps, rest
	}
	if u, ok := err.(interface{ Unwrap() error }); ok {
		// A wrapper that only says where (workload: ...) around
		// problems: the problems, which name their fields.
		if xp, xr := Of(u.Unwrap()); len(xr) == 0 {
			return xp, nil
		}
	}
	return nil, []error{err}
}

var (
	_ error = Problem{}
	_ error = Problems(nil)
)
