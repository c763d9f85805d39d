package spec

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

var (
	_ json.Marshaler           = Rate{}
	_ encoding.TextUnmarshaler = (*Rate)(nil)
)

// Rate is workload.rate: an open loop's arrival rate in requests per
// second ("rate: 20", "rate: .inf"), or a share of a measured capacity
// ("rate: 80%"), which workload.capacity names: the rate is then that
// share of the capacity file's knee, set by the capacity package's Apply
// before the run (llmchaos run does it). The zero Rate is unset.
type Rate struct {
	// PerSecond is the rate in requests per second (+Inf: every request
	// at once). With a share, it is 0 until the share is applied.
	PerSecond float64
	// Share is the share of the capacity's knee, 0.8 for "80%"; 0 for a
	// rate in requests per second.
	Share float64
}

// ratePattern is the JSON Schema pattern of a rate written as a string:
// a percentage of the capacity, or infinity.
const ratePattern = `^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*%\s*$|^\+?\.?[iI]nf$`

// PerSecondRate is a rate of n requests per second.
func PerSecondRate(n float64) Rate { return Rate{PerSecond: n} }

// IsShare reports whether the rate is given as a share of a capacity.
func (r Rate) IsShare() bool { return r.Share > 0 }

// Unresolved reports whether the rate is a share not yet applied: it
// has no requests per second yet.
func (r Rate) Unresolved() bool { return r.Share > 0 && r.PerSecond == 0 }

// String writes the rate as the file does: "20", "inf" or "80%" (with the
// resolved rate when it is known: "80% (52 req/s)").
func (r Rate) String() string {
	n := strconv.FormatFloat(r.PerSecond, 'f', -1, 64)
	if math.IsInf(r.PerSecond, 1) {
		n = "inf"
	}
	if r.Share == 0 {
		return n
	}
	s := strconv.FormatFloat(100*r.Share, 'f', -1, 64) + "%"
	if r.PerSecond > 0 {
		s += " (" + n + " req/s)"
	}
	return s
}

// MarshalJSON writes the requests per second as a number ("inf" for
// +Inf, which JSON numbers cannot hold), or, for a share not yet
// applied, the share as the file wrote it ("80%").
func (r Rate) MarshalJSON() ([]byte, error) {
	switch {
	case r.Unresolved():
		return json.Marshal(strconv.FormatFloat(100*r.Share, 'f', -1, 64) + "%")
	case math.IsInf(r.PerSecond, 1):
		return json.Marshal("inf")
	}
	return json.Marshal(r.PerSecond)
}

// MarshalYAML writes what the file would: the requests per second, .inf,
// or the share ("80%") with the capacity still to apply.
func (r Rate) MarshalYAML() (any, error) {
	switch {
	case r.Unresolved():
		return strconv.FormatFloat(100*r.Share, 'f', -1, 64) + "%", nil
	case math.IsInf(r.PerSecond, 1):
		return math.Inf(1), nil
	}
	return r.PerSecond, nil
}

// UnmarshalText reads a number of requests per second (".inf" or "inf":
// every request at once) or a percentage of the capacity ("80%", more
// than 0; above 100% loads past the knee on purpose).
func (r *Rate) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("%q: want a percentage of the measured capacity such as 80%%, or requests per second such as 20", s)
		case v <= 0:
			return fmt.Errorf("%s of the capacity sends nothing: want more than 0%%, e.g. 80%%", s)
		case v > 1000:
			return fmt.Errorf("%s of the capacity is more than ten times the knee: want at most 1000%%", s)
		}
		*r = Rate{Share: v / 100}
		return nil
	}
	switch strings.ToLower(s) {
	case ".inf", "inf", "+inf", "+.inf":
		*r = Rate{PerSecond: math.Inf(1)}
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(v):
		return fmt.Errorf("%q: want requests per second such as 20, .inf, or a percentage of the measured capacity such as 80%%", s)
	case v == 0:
		return errors.New("0 requests per second sends nothing (and would be replaced by the preset's rate): want more than 0")
	case v < 0:
		return fmt.Errorf("%s requests per second is negative: want more than 0", s)
	}
	*r = Rate{PerSecond: v}
	return nil
}

// errUnresolvedRate is Configs' error for a share not yet applied.
func errUnresolvedRate(r Rate) error {
	return fmt.Errorf("workload.rate %s is a share of a measured capacity that was not applied: resolve the experiment first (spec.LoadExperiment or spec.Resolve read workload.capacity), as every llmchaos verb does", r)
}
