package js

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/grafana/sobek"
	"github.com/grafana/sobek/parser"
)

// ScriptError is a problem of a script found before any load: a syntax
// error, an unknown import, or an exception in the init context, setup or
// teardown. Pos is "FILE:LINE:COL" when known.
type ScriptError struct {
	Pos   string // where, as FILE:LINE:COL ("" when unknown)
	Msg   string // what went wrong
	Stack string // the JavaScript stack, when an exception was thrown
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	if e.Pos != "" {
		b.WriteString(e.Pos + ": ")
	}
	b.WriteString(e.Msg)
	if e.Stack != "" {
		b.WriteString("\n" + strings.TrimRight(e.Stack, "\n"))
	}
	return b.String()
}

// lineColPattern splits sobek's "FILE: Line L:C MESSAGE".
var lineColPattern = regexp.MustCompile(`^(.*): Line (\d+):(\d+) (.*)$`)

// scriptError turns what sobek returned or threw into a *ScriptError,
// with the position of the innermost frame that has one.
func scriptError(what string, err error) *ScriptError {
	if se, ok := errors.AsType[*ScriptError](err); ok {
		return se
	}
	if ex, ok := errors.AsType[*sobek.Exception](err); ok {
		return exceptionError(what, ex)
	}
	if pr, ok := errors.AsType[*promiseRejection](err); ok {
		se := rejection(what, pr.value)
		if !pr.own {
			se.Msg = what + ": Uncaught (in promise) " + strings.TrimPrefix(se.Msg, what+": ")
		}
		return se
	}
	if el, ok := errors.AsType[parser.ErrorList](err); ok && len(el) > 0 {
		p := el[0].Position
		return &ScriptError{Pos: fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column), Msg: what + ": SyntaxError: " + el[0].Message}
	}
	if pe, ok := errors.AsType[*parser.Error](err); ok {
		p := pe.Position
		return &ScriptError{Pos: fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column), Msg: what + ": SyntaxError: " + pe.Message}
	}
	if ce, ok := errors.AsType[*sobek.CompilerSyntaxError](err); ok {
		pos, msg := "", ce.Message
		if m := lineColPattern.FindStringSubmatch(msg); m != nil {
			pos, msg = m[1]+":"+m[2]+":"+m[3], m[4]
		} else if ce.File != nil {
			p := ce.File.Position(ce.Offset)
			pos = fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
		}
		return &ScriptError{Pos: pos, Msg: what + ": SyntaxError: " + msg}
	}
	return &ScriptError{Msg: what + ": " + err.Error()}
}

// exceptionError describes a thrown JavaScript exception.
func exceptionError(what string, ex *sobek.Exception) *ScriptError {
	se := &ScriptError{Msg: what + ": " + exceptionMessage(ex.Value())}
	var b strings.Builder
	for _, f := range ex.Stack() {
		p := f.Position()
		if p.Filename == "" || p.Line == 0 {
			continue
		}
		pos := fmt.Sprintf("%s:%d:%d", framePath(p.Filename), p.Line, p.Column)
		if se.Pos == "" {
			se.Pos = pos
		}
		name := f.FuncName()
		if name == "" {
			name = "<anonymous>"
		}
		fmt.Fprintf(&b, "\tat %s (%s)\n", name, pos)
	}
	se.Stack = b.String()
	return se
}

// framePath is the file of a stack frame. A position that came through a
// source map is a URL, with spaces and such escaped: such a path is
// unescaped when the unescaped file exists and the escaped one does not.
func framePath(name string) string {
	if !strings.Contains(name, "%") {
		return name
	}
	u, err := url.PathUnescape(name)
	if err != nil {
		return name
	}
	if _, err := os.Stat(name); err == nil {
		return name
	}
	if _, err := os.Stat(u); err == nil {
		return u
	}
	return name
}

// exceptionMessage is a thrown value's text: an Error's "Name: message",
// else the value as a string.
func exceptionMessage(v sobek.Value) string {
	if v == nil {
		return "undefined"
	}
	if o, ok := v.(*sobek.Object); ok {
		if m := o.Get("message"); m != nil && !sobek.IsUndefined(m) {
			if n := o.Get("name"); n != nil && !sobek.IsUndefined(n) {
				return n.String() + ": " + m.String()
			}
			return m.String()
		}
	}
	return v.String()
}
