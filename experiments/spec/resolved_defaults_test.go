package spec

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// conditionalDefaults are the documented defaults that depend on other
// params (their default tag says how), as the resolution fills them in
// for each type's example params.
var conditionalDefaults = map[string]map[string]any{
	"network.bandwidth":      {"burst_bytes": 4096, "latency": "50ms"}, // example: rate 1mbit
	"http.error":             {"message": "llmchaos: injected 503 Service Unavailable"},
	"gpu.memory_pressure":    {"grow": nil},  // example: gib 10, no leave_free_gib
	"gpupod.memory_pressure": {"grow": true}, // example: leave_free_gib 1
}

// Every fault type's resolved params carry its documented defaults, and
// only them: resolving an experiment whose fault gives its type's example
// params yields the example with every key it leaves out set to the
// default its tag documents (docs/faults.md is generated from those
// tags), so that what a dry run and the runner read is what the fault
// runs, and no family applies a default of its own downstream.
func TestResolvedParamsCarryTheDocumentedDefaults(t *testing.T) {
	t.Parallel()
	for _, ft := range FaultTypeList() {
		t.Run(ft.Name, func(t *testing.T) {
			t.Parallel()
			var example map[string]any
			if err := yaml.Unmarshal([]byte(ft.Example), &example); err != nil {
				t.Fatalf("example: %v", err)
			}
			src := edit(8, "  - name: f\n    type: "+ft.Name+"\n    at: 10s\n    duration: 10s\n    params:\n"+
				indent(ft.Example, "      "))
			s, _, err := Parse("t.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			x, err := Resolve(s, "")
			if err != nil {
				t.Fatal(err)
			}
			got := x.Faults[0].Params(TargetEnv{})

			want := maps.Clone(example)
			cond := conditionalDefaults[ft.Name]
			for _, p := range ft.Params() {
				if p.Default == "" || has(example, p.Name) {
					continue
				}
				v, ok := cond[p.Name]
				if ok && v == nil {
					continue // not for the example's params
				}
				if !ok {
					if err := yaml.Unmarshal([]byte(p.Default), &v); err != nil {
						t.Fatalf("param %s: default %q is no value: %v", p.Name, p.Default, err)
					}
				}
				set(want, p.Name, v)
			}
			wantParams := ft.NewParams()
			var iss issues
			newDecoder(&iss).decode("params", valueNode(want), reflect.ValueOf(wantParams).Elem())
			if len(iss) > 0 {
				t.Fatalf("the documented defaults %v do not decode: %+v", want, iss)
			}
			if !reflect.DeepEqual(got, wantParams) {
				t.Errorf("resolved params\n%s\nwant the documented defaults\n%s", dump(got), dump(wantParams))
			}
		})
	}
}

// indent indents every line of s by pre.
func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// has reports whether m holds the dotted key k.
func has(m map[string]any, k string) bool {
	head, rest, nested := strings.Cut(k, ".")
	v, ok := m[head]
	if !ok || !nested {
		return ok
	}
	sub, ok := v.(map[string]any)
	return ok && has(sub, rest)
}

// set sets the dotted key k of m to v, making the mappings on its way.
func set(m map[string]any, k string, v any) {
	head, rest, nested := strings.Cut(k, ".")
	if !nested {
		m[head] = v
		return
	}
	sub, ok := m[head].(map[string]any)
	if !ok {
		sub = map[string]any{}
	} else {
		sub = maps.Clone(sub)
	}
	set(sub, rest, v)
	m[head] = sub
}

// dump shows params with their pointers followed.
func dump(p any) string {
	v := reflect.ValueOf(p)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	var b strings.Builder
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		fmt.Fprintf(&b, "  %s: %+v\n", v.Type().Field(i).Name, f.Interface())
	}
	return b.String()
}
