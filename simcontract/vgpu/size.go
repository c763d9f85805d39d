package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte multiples used by ParseSize and FormatSize.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// unitMultiplier maps a lower-case unit suffix to its multiplier. Single
// letters are binary, as in Docker's memory flags; "GB" is decimal, "GiB" binary.
func unitMultiplier(unit string) (float64, bool) {
	switch unit {
	case "", "b":
		return 1, true
	case "k", "kib":
		return float64(KiB), true
	case "m", "mib":
		return float64(MiB), true
	case "g", "gib":
		return float64(GiB), true
	case "t", "tib":
		return float64(TiB), true
	case "kb":
		return 1e3, true
	case "mb":
		return 1e6, true
	case "gb":
		return 1e9, true
	case "tb":
		return 1e12, true
	}
	return 0, false
}

// ParseSize parses a memory size such as "141GiB", "80GB", "1.5 GiB",
// "512MiB" or "1073741824" (bytes). Units are case-insensitive: KiB, MiB, GiB
// and TiB (and K, M, G, T) are powers of 1024; KB, MB, GB and TB powers of 1000.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit such as 141GiB, 80GB or 512MiB", s)
	}
	mult, ok := unitMultiplier(unit)
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, t[i:])
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil && mult == 1 {
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: bad number %q", s, num)
	}
	v := math.Round(f * mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}

// FormatSize renders n bytes for people: GiB with one decimal from 1 GiB up,
// MiB below that, bytes below 1 MiB. Errors and logs use it so numbers read
// alike everywhere.
func FormatSize(n int64) string {
	a := n
	if a < 0 {
		a = -a
	}
	switch {
	case a >= GiB:
		return fmt.Sprintf("%.1f GiB", float64(n)/float64(GiB))
	case a >= MiB:
		return fmt.Sprintf("%.1f MiB", float64(n)/float64(MiB))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
