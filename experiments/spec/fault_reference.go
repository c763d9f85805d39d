package spec

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteFaultTypes writes one line per fault type (name, family, lifetime,
// summary) under a header: `llmchaos faults`.
func WriteFaultTypes(w io.Writer) error {
	rows := [][]string{{"TYPE", "FAMILY", "LIFETIME", "SUMMARY"}}
	for _, t := range FaultTypeList() {
		rows = append(rows, []string{t.Name, t.Family, string(t.Lifetime), t.Summary})
	}
	_, err := io.WriteString(w, hangingTable("", rows))
	return err
}

// WriteFaultType writes what `llmchaos faults TYPE` shows of fault type
// name: its summary, its params (type, default, unit, required, doc) and
// an example fault block.
func WriteFaultType(w io.Writer, name string) error {
	t, ok := FaultTypes()[name]
	if !ok {
		msg := fmt.Sprintf("unknown fault type %q", name)
		if s := suggest(name, faultTypeNames(FaultTypes())); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return fmt.Errorf("%s; `llmchaos faults` lists them", msg)
	}
	var b strings.Builder
	b.WriteString(wrapText(fmt.Sprintf("%s (%s, %s): %s.", t.Name, t.Family, t.Lifetime, t.Summary), "  "))
	b.WriteString(wrapText(fmt.Sprintf("Acts on: %s.", targetText(t)), "  "))
	b.WriteString("\nParams:\n")
	rows := [][]string{{"KEY", "TYPE", "DEFAULT", "UNIT", "REQUIRED", "DESCRIPTION"}}
	for _, p := range t.Params() {
		req := "no"
		if p.Required {
			req = "yes"
		}
		rows = append(rows, []string{p.Name, p.Type, orDash(p.Default), orDash(p.Unit), req, p.Doc})
	}
	b.WriteString(hangingTable("  ", rows))
	fmt.Fprintf(&b, "\nExample:\n\n%s", exampleFault(t))
	_, err := io.WriteString(w, b.String())
	return err
}

// refWidth is the widest line of the fault reference, as of every
// terminal line llmchaos prints.
const refWidth = 120

// hangingTable lays rows out in columns two spaces apart, each line
// starting with indent, and wraps the last column (free text) at word
// boundaries to keep lines within refWidth, its continuation lines
// starting under the column.
func hangingTable(indent string, rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	n := len(rows[0])
	widths := make([]int, n-1)
	for _, r := range rows {
		for i := range n - 1 {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	lead := utf8.RuneCountInString(indent)
	for _, w := range widths {
		lead += w + 2
	}
	room := max(refWidth-lead, 30)
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(indent)
		for i := range n - 1 {
			b.WriteString(r[i] + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(r[i])+2))
		}
		for j, line := range wrapWords(r[n-1], room) {
			if j > 0 {
				b.WriteString(strings.Repeat(" ", lead))
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// wrapText wraps s within refWidth, continuation lines starting with
// indent, and ends it with a newline.
func wrapText(s, indent string) string {
	lines := wrapWords(s, refWidth)
	if len(lines) > 1 {
		rest := strings.Join(lines[1:], " ")
		lines = append(lines[:1], wrapWords(rest, refWidth-utf8.RuneCountInString(indent))...)
	}
	return strings.Join(lines, "\n"+indent) + "\n"
}

// wrapWords breaks s into lines of at most width runes at spaces (a word
// longer than width stands on a line of its own).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for word := range strings.FieldsSeq(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// targetText says where faults of type t act.
func targetText(t FaultType) string {
	switch {
	case t.Target == TargetProxy && t.L7:
		return "a fault proxy in HTTP mode, per request (fault target: proxy, endpoints, count or percent)"
	case t.Target == TargetProxy:
		return "the bytes through a fault proxy (fault target: proxy, endpoints, count or percent)"
	case t.FromSim != nil && t.FromKubernetes != nil:
		return "what its params name (left out with target.sim: the simulator's replicas; with target.kubernetes: its pods)"
	case t.FromSim != nil:
		return "what its params name (left out with target.sim: the simulator's replicas)"
	}
	return "what its params name"
}

// exampleFault returns a fault block of type t, with its example params,
// as it appears in an experiment file.
func exampleFault(t FaultType) string {
	var b strings.Builder
	name := strings.NewReplacer(".", "-", "_", "-").Replace(t.Name)
	fmt.Fprintf(&b, "faults:\n  - name: %s\n    type: %s\n    at: 30s\n    duration: 20s\n    params:\n", name, t.Name)
	for _, l := range strings.Split(strings.TrimSpace(t.Example), "\n") {
		fmt.Fprintf(&b, "      %s\n", l)
	}
	return b.String()
}

// FaultReference returns docs/faults.md's fault reference (Markdown): every
// fault type with its summary and params, generated from the families'
// lists.
func FaultReference() string {
	var b strings.Builder
	b.WriteString("| type | family | lifetime | summary |\n| --- | --- | --- | --- |\n")
	for _, t := range FaultTypeList() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Name, t.Family, t.Lifetime, t.Summary)
	}
	for _, t := range FaultTypeList() {
		fmt.Fprintf(&b, "\n### `%s`\n\n%s; acts on %s.\n\n", t.Name, capitalize(t.Summary), targetText(t))
		b.WriteString("| param | type | default | unit | required | description |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, p := range t.Params() {
			req := ""
			if p.Required {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", p.Name, p.Type, mdCode(p.Default), p.Unit, req, strings.ReplaceAll(p.Doc, "|", `\|`))
		}
		// The docs test (cmd/llmchaos) validates each example in an experiment.
		fmt.Fprintf(&b, "\n<!-- docs-test: fragment -->\n```yaml\n%s```\n", exampleFault(t))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
