package spec

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteFaultTypes writes one line per fault type (name, family, lifetime,
// summary) under a header: `llmchaos faults`.
func WriteFaultTypes(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tFAMILY\tLIFETIME\tSUMMARY")
	for _, t := range FaultTypeList() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Family, t.Lifetime, t.Summary)
	}
	return tw.Flush()
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
	fmt.Fprintf(w, "%s (%s, %s): %s.\n", t.Name, t.Family, t.Lifetime, t.Summary)
	fmt.Fprintf(w, "Acts on: %s.\n\nParams:\n", targetText(t))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tTYPE\tDEFAULT\tUNIT\tREQUIRED\tDESCRIPTION")
	for _, p := range t.Params() {
		req := "no"
		if p.Required {
			req = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Type, orDash(p.Default), orDash(p.Unit), req, p.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nExample:\n\n%s", exampleFault(t))
	return err
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
		fmt.Fprintf(&b, "\n```yaml\n%s```\n", exampleFault(t))
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
