package labels_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
)

// TestParse: selectors as kubectl's -l takes them, written back sorted by
// key, and what they match; bad ones fail with the API server's words.
func TestParse(t *testing.T) {
	set := map[string]string{"app": "vllm", "tier": "gpu", "n": "3"}
	for _, tc := range []struct {
		in, want string
		matches  bool
	}{
		{"app=vllm", "app=vllm", true},
		{"app==vllm,tier!=cpu", "app==vllm,tier!=cpu", true},
		{" tier in (gpu, tpu) , app ", "app,tier in (gpu,tpu)", true},
		{"app notin (vllm)", "app notin (vllm)", false},
		{"!canary", "!canary", true},
		{"n>2,n<4", "n>2,n<4", true},
		{"example.com/role=server", "example.com/role=server", false},
		{"app=", "app=", false},
		{"", "", true},
	} {
		sel, err := labels.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := sel.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		if got := sel.Matches(set); got != tc.matches {
			t.Errorf("Parse(%q).Matches(%v) = %t, want %t", tc.in, set, got, tc.matches)
		}
		if sel.Empty() != (tc.in == "") {
			t.Errorf("Parse(%q).Empty() = %t", tc.in, sel.Empty())
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"app in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
		{"app in vllm", "unable to parse requirement: found 'vllm' expected: '('"},
		{"app=a b", "found 'b', expected: ',' or 'end of string'"},
		{"=x", "unable to parse requirement: found '=', expected: !, identifier, or 'end of string'"},
		{"n>x", "for 'Gt', 'Lt' operators, the value must be an integer"},
		{"Bad Key!=1", "found 'Key', expected: in, notin, =, ==, !=, gt, lt"},
		{"-x=1", "name part must consist of alphanumeric characters"},
		{"app=-v", "a valid label must be an empty string or consist of alphanumeric characters"},
	} {
		_, err := labels.Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParse: whatever parses writes back to a selector that parses to the
// same string.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"app=vllm", "a in (x,y),!b", "n>1", "x notin (a)", "k==v,k2!=v2", "example.com/a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := labels.Parse(in)
		if err != nil {
			return
		}
		again, err := labels.Parse(sel.String())
		if err != nil {
			t.Fatalf("Parse(%q) wrote %q, which does not parse: %v", in, sel.String(), err)
		}
		if again.String() != sel.String() {
			t.Fatalf("Parse(%q): %q, then %q", in, sel.String(), again.String())
		}
	})
}
