package js

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// dtsInterfaces reads the interfaces and classes of a .d.ts file loosely:
// the names declared at the top level of each body, by interface name.
func dtsInterfaces(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`).ReplaceAllString(string(b), "")
	head := regexp.MustCompile(`(?:interface|class)\s+(\w+)[^{]*\{`)
	member := regexp.MustCompile(`^\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[:(]`)
	out := map[string][]string{}
	for _, m := range head.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		depth, start := 1, m[1]
		end := start
		for end < len(src) && depth > 0 {
			switch src[end] {
			case '{':
				depth++
			case '}':
				depth--
			}
			end++
		}
		// Members are the lines of the body at depth 1.
		d := 0
		for _, line := range strings.Split(src[start:end-1], "\n") {
			if d == 0 {
				if mm := member.FindStringSubmatch(line); mm != nil {
					out[name] = append(out[name], mm[1])
				}
			}
			d += strings.Count(line, "{") - strings.Count(line, "}")
		}
	}
	return out
}

// jsNames are the property names a struct's js tags give.
func jsNames(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("js"); tag != "" && tag != "-" {
			out = append(out, strings.Split(tag, ",")[0])
		}
	}
	return out
}

func TestLLMTypeDeclarationsMatchTheModule(t *testing.T) {
	decl := dtsInterfaces(t, filepath.Join("types", "k6-x-llm.d.ts"))
	res := resultObject(&recording.Result{ITLMicros: []uint32{1000, 3000}}, client.Output{ToolCalls: []client.ToolCall{{ID: "c", Name: "f"}}})
	usage, _ := res["usage"].(map[string]any)
	itl, _ := res["itl"].(map[string]any)
	calls, _ := res["toolCalls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("toolCalls = %v, want one", res["toolCalls"])
	}
	call, _ := calls[0].(map[string]any)
	fn, _ := call["function"].(map[string]any)
	checks := []struct {
		iface string
		names []string
	}{
		{"Result", mapKeys(res)},
		{"Usage", mapKeys(usage)},
		{"ITL", mapKeys(itl)},
		{"ToolCall", mapKeys(call)},
		{"ToolCallFunction", mapKeys(fn)},
		{"ClientOptions", jsNames(llmClientOptions{})},
		{"Request", jsNames(llmRequest{})},
		{"Message", []string{"role", "content"}},
		{"Client", []string{"chat", "complete", "request"}},
	}
	for _, c := range checks {
		if len(c.names) == 0 {
			t.Errorf("%s: the Go side has no names (broken test)", c.iface)
		}
		for _, n := range c.names {
			if !slices.Contains(decl[c.iface], n) {
				t.Errorf("types/k6-x-llm.d.ts: %s does not declare %q, which the module has (declared: %v)", c.iface, n, decl[c.iface])
			}
		}
	}
	// And nothing declared that the module does not return.
	for _, c := range []struct {
		iface string
		obj   map[string]any
	}{{"Result", res}, {"Usage", usage}, {"ITL", itl}, {"ToolCall", call}, {"ToolCallFunction", fn}} {
		for _, n := range decl[c.iface] {
			if _, ok := c.obj[n]; !ok {
				t.Errorf("types/k6-x-llm.d.ts: %s declares %q, which chat() does not return", c.iface, n)
			}
		}
	}
	// The request fields the module sends as they are, and the message
	// fields it passes through.
	for _, n := range []string{"tool_calls", "tool_call_id", "name"} {
		if !slices.Contains(decl["Message"], n) {
			t.Errorf("types/k6-x-llm.d.ts: Message does not declare %q", n)
		}
	}
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
