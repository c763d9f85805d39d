package spec

import (
	"slices"
	"strings"
	"testing"
)

// recovery.latency_band is checked: 1 or more, and an explicit 0 is not
// replaced by the default.
func TestValidateLatencyBand(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"default", baseDoc, nil},
		{"two", baseDoc + "recovery: {latency_band: 2}\n", nil},
		{"below one", baseDoc + "recovery: {latency_band: 0.5}\n",
			[]string{`t.yaml:11:26: recovery.latency_band: 0.5: want 1 or more (the p99 a recovered window may have, in times the baseline's)`}},
		{"zero", baseDoc + "recovery: {latency_band: 0}\n",
			[]string{`t.yaml:11:26: recovery.latency_band: 0 would be replaced by the default (1.5): want 1 or more, or leave the key out for the default`}},
		{"infinite", baseDoc + "recovery: {latency_band: .inf}\n",
			[]string{`t.yaml:11:26: recovery.latency_band: +Inf: want 1 or more (the p99 a recovered window may have, in times the baseline's)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemLines(t, tc.src)
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
		})
	}
}
