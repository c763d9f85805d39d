package spec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles the committed experiment schema with a real JSON
// Schema validator, under its $id.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSchemaFile(t, schemaFile, SchemaID)
}

// compileSchemaFile compiles a committed schema under its $id.
func compileSchemaFile(t *testing.T, schemaFile, schemaID string) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaID)
	if err != nil {
		t.Fatalf("compile %s: %v", schemaFile, err)
	}
	return s
}

// yamlInstance reads a YAML document as the JSON value a schema validator
// checks.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Every shipped experiment validates against the schema, as it does
// against the validator (an editor shows no error in them: replica faults
// that leave their target to target.sim included); every shipped suite
// against the suite schema.
func TestCatalogValidatesAgainstSchema(t *testing.T) {
	s := compileSchema(t)
	suites := compileSchemaFile(t, suiteSchemaFile, SuiteSchemaID)
	files, err := filepath.Glob("../catalog/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("catalog: %v, %d files", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			schema, path := s, SchemaPath
			if DocumentKind(src) == KindSuite {
				schema, path = suites, SuiteSchemaPath
			}
			if err := schema.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("%s does not validate against %s: %v", f, path, err)
			}
		})
	}
}

// The schema refuses what the validator refuses for its shape: an unknown
// param of a fault type, a param of the wrong type.
func TestSchemaRefusesBadParams(t *testing.T) {
	s := compileSchema(t)
	base, err := os.ReadFile("../catalog/replica-kill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, from, to string }{
		{"unknown param", "params: {signal: SIGKILL,", "params: {signl: SIGKILL,"},
		{"wrong type", "min_available: 2}", "min_available: many}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(string(base), tt.from, tt.to, 1)
			if doc == string(base) {
				t.Fatalf("the edit %q does not apply to the catalog file", tt.from)
			}
			if err := s.Validate(yamlInstance(t, []byte(doc))); err == nil {
				t.Errorf("schema accepts:\n%s", doc)
			}
		})
	}
}
