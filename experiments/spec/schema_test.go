package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed generated files (schema, the fault reference in docs/faults.md) from the Go types")

// schemaFile is SchemaPath seen from this package's directory.
const schemaFile = "schema/experiment.schema.json"

// suiteSchemaFile is SuiteSchemaPath seen from this package's directory.
const suiteSchemaFile = "schema/suite.schema.json"

// The committed schemas are what GenerateSchema and GenerateSuiteSchema
// make of the types now; with -update (go generate ./experiments/spec)
// they are rewritten.
func TestSchemaUpToDate(t *testing.T) {
	for _, tt := range []struct {
		file, repoPath string
		gen            func() ([]byte, error)
	}{
		{schemaFile, SchemaPath, GenerateSchema},
		{suiteSchemaFile, SuiteSchemaPath, GenerateSuiteSchema},
	} {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			got, err := tt.gen()
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(tt.file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tt.file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatalf("%v (generate it with: go test ./experiments/spec -run TestSchemaUpToDate -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s is stale: regenerate it with go generate ./experiments/spec (go test ./experiments/spec -run TestSchemaUpToDate -update)", tt.repoPath)
			}
			again, _ := tt.gen()
			if !bytes.Equal(got, again) {
				t.Errorf("the schema generator is not deterministic")
			}
		})
	}
}

// The schema accepts the example experiment and a code-built one, and
// refuses documents the loader refuses for their shape.
func TestSchemaValidatesDocuments(t *testing.T) {
	raw, err := GenerateSchema()
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	spec := loadQuickstart(t)
	d1, d2 := spec.WithDefaults(), validSpec().WithDefaults()
	goodDocs := []any{docOf(t, spec), docOf(t, &d1), docOf(t, &d2)}
	for i, doc := range goodDocs {
		if errs := (&miniSchema{root: schema}).check(doc, schema, "$"); len(errs) > 0 {
			t.Errorf("good document %d: %q", i, errs)
		}
	}
	tests := []struct {
		name    string
		edit    func(doc map[string]any)
		wantErr string
	}{
		{"unknown top-level key", func(d map[string]any) { d["stopConditions"] = []any{} }, `$: unknown key "stopConditions"`},
		{"unknown fault key", func(d map[string]any) { fault(d)["start"] = "1s" }, `$.faults[0]: unknown key "start"`},
		{"bad duration", func(d map[string]any) { fault(d)["at"] = "10x" }, `$.faults[0].at: no alternative matches`},
		{"unknown fault type", func(d map[string]any) { fault(d)["type"] = "network.latncy" }, `$.faults[0].type: "network.latncy" is not one of`},
		{"params of the fault type", func(d map[string]any) {
			fault(d)["params"] = map[string]any{"latency": "1s", "stall": "2s"}
		}, `$.faults[0].params: unknown key "stall"`},
		{"two target kinds", func(d map[string]any) {
			d["target"].(map[string]any)["llm"] = map[string]any{"url": "http://127.0.0.1:1"}
		}, `$.target: 2 alternatives of oneOf match, want 1`},
		{"missing kind", func(d map[string]any) { delete(d, "kind") }, `$: missing key "kind"`},
		{"wrong enum", func(d map[string]any) { d["workload"].(map[string]any)["arrival"] = "burst" }, `$.workload.arrival: "burst" is not one of`},
		{"a key and its other name", func(d map[string]any) {
			d["workload"].(map[string]any)["input_tokens"] = 64
			d["workload"].(map[string]any)["prompt_tokens"] = 64
		}, `$.workload: matches the schema under not`},
		{"threshold entry of the wrong type", func(d map[string]any) {
			d["thresholds"].(map[string]any)["ttft"] = []any{5.0}
		}, `$.thresholds.ttft[0]: no alternative matches`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := docOf(t, spec)
			tt.edit(doc)
			errs := (&miniSchema{root: schema}).check(doc, schema, "$")
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, tt.wantErr) }) {
				t.Errorf("schema errors %q, want one starting %q", errs, tt.wantErr)
			}
		})
	}
}

func fault(d map[string]any) map[string]any { return d["faults"].([]any)[0].(map[string]any) }

// docOf returns s as a JSON document of plain values.
func docOf(t *testing.T, s *Spec) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// miniSchema checks a document against the part of JSON Schema draft-07
// that GenerateSchema writes: type, properties, required,
// additionalProperties, items, enum, const, pattern, minimum, $ref, allOf,
// anyOf, oneOf, not and if/then. It returns every violation found.
type miniSchema struct{ root map[string]any }

func (m *miniSchema) check(v any, s map[string]any, at string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		def, ok := m.root["definitions"].(map[string]any)[name].(map[string]any)
		if !ok {
			bad("dangling $ref %s", ref)
			return errs
		}
		return m.check(v, def, at)
	}
	if t, ok := s["type"]; ok && !typeMatches(v, t) {
		bad("%v is not of type %v", v, t)
		return errs
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
		bad("%q is not one of %v", v, e)
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		bad("%v is not %v", v, c)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := v.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			bad("%q does not match %s", str, p)
		}
	}
	if min, ok := s["minimum"].(float64); ok {
		if f, isNum := v.(float64); isNum && f < min {
			bad("%v is below %v", f, min)
		}
	}
	if obj, isObj := v.(map[string]any); isObj {
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				bad("missing key %q", r)
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := at + "." + k
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				errs = append(errs, m.check(obj[k], ps, sub)...)
			case s["additionalProperties"] == false && props != nil:
				bad("unknown key %q", k)
			default:
				if ap, ok := s["additionalProperties"].(map[string]any); ok {
					errs = append(errs, m.check(obj[k], ap, sub)...)
				}
			}
		}
	}
	if arr, isArr := v.([]any); isArr {
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range arr {
				errs = append(errs, m.check(x, items, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	for _, sub := range asList(s["allOf"]) {
		sm := sub.(map[string]any)
		if cond, ok := sm["if"].(map[string]any); ok {
			if len(m.check(v, cond, at)) == 0 {
				errs = append(errs, m.check(v, sm["then"].(map[string]any), at)...)
			}
			continue
		}
		errs = append(errs, m.check(v, sm, at)...)
	}
	if alts := asList(s["anyOf"]); len(alts) > 0 {
		if !slices.ContainsFunc(alts, func(a any) bool { return len(m.check(v, a.(map[string]any), at)) == 0 }) {
			bad("no alternative matches")
		}
	}
	if not, ok := s["not"].(map[string]any); ok && len(m.check(v, not, at)) == 0 {
		bad("matches the schema under not")
	}
	if alts := asList(s["oneOf"]); len(alts) > 0 {
		n := 0
		for _, a := range alts {
			if len(m.check(v, a.(map[string]any), at)) == 0 {
				n++
			}
		}
		if n != 1 {
			bad("%d alternatives of oneOf match, want 1", n)
		}
	}
	return errs
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func typeMatches(v any, t any) bool {
	if l, ok := t.([]any); ok {
		return slices.ContainsFunc(l, func(x any) bool { return typeMatches(v, x) })
	}
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}
