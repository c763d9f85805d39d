package resource_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/kube/api/resource"
)

// TestParseQuantity: the forms Kubernetes writes, their value rounded up
// and in thousandths, and the text kept as written.
func TestParseQuantity(t *testing.T) {
	for _, tc := range []struct {
		in          string
		value, mill int64
	}{
		{"1", 1, 1000}, {"500Mi", 500 << 20, 500 << 20 * 1000}, {"1.5", 2, 1500}, {"100m", 1, 100},
		{"2e3", 2000, 2000000}, {"1Gi", 1 << 30, 1 << 30 * 1000}, {"3k", 3000, 3000000}, {"-2", -2, -2000},
	} {
		q, err := resource.ParseQuantity(tc.in)
		if err != nil {
			t.Errorf("ParseQuantity(%q): %v", tc.in, err)
			continue
		}
		if q.Value() != tc.value || q.MilliValue() != tc.mill || q.String() != tc.in {
			t.Errorf("ParseQuantity(%q) = %s, value %d, milli %d; want %d, %d", tc.in, q, q.Value(), q.MilliValue(), tc.value, tc.mill)
		}
	}
	for _, in := range []string{"", "Mi", "1.2.3", "5X", "1e"} {
		if _, err := resource.ParseQuantity(in); err == nil || !strings.Contains(err.Error(), "quantity") {
			t.Errorf("ParseQuantity(%q): %v, want an error", in, err)
		}
	}
	var list map[string]resource.Quantity
	if err := json.Unmarshal([]byte(`{"cpu":"32","memory":"256Gi","pods":110}`), &list); err != nil {
		t.Fatal(err)
	}
	if list["pods"].Value() != 110 || list["memory"].Value() != 256<<30 {
		t.Errorf("decoded %v", list)
	}
	out, err := json.Marshal(list)
	if err != nil || string(out) != `{"cpu":"32","memory":"256Gi","pods":"110"}` {
		t.Errorf("encoded %s, %v", out, err)
	}
}
