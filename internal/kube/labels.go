package kube

import (
	"crypto/rand"
	"strings"
)

// Labels llmchaos reads and writes.
const (
	// LabelTarget opts a namespace or a pod in: llmchaos acts only on pods
	// that carry it with value "true", or whose namespace does.
	LabelTarget = "llmchaos.io/target"
	// LabelRun marks an object a run created with the run's id, so that
	// what a run left behind can be found by label.
	LabelRun = "llmchaos.io/run"
	// LabelFault marks an object a fault created with the fault's name.
	LabelFault = "llmchaos.io/fault"
	// LabelManagedBy is the well-known label saying which tool manages an
	// object; llmchaos sets it to ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy on llmchaos's objects.
	ManagedBy = "llmchaos"
)

// OwnedLabels returns the labels of an object made for fault of run runID:
// managed-by, run and fault, their values made valid label values.
func OwnedLabels(runID, fault string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelRun:       LabelValue(runID),
		LabelFault:     LabelValue(fault),
	}
}

// LabelValue makes s a valid label value: characters other than letters,
// digits, '-', '_' and '.' become '-', it is cut to 63 characters and
// trimmed to begin and end with a letter or digit ("" stays "").
func LabelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return strings.TrimFunc(string(b), func(r rune) bool { return r > 0x7f || !isAlnum(byte(r)) })
}

// ObjectName returns a fresh name for an object a fault creates: prefix
// and the fault's name made a DNS label (lower case, '-' for the rest),
// cut so that a random 6-character suffix fits in 63 characters. The name
// is chosen before the object exists, so that the journal can record it
// first; the suffix keeps two runs of one experiment apart.
func ObjectName(prefix, fault string) string {
	const suffixLen = 6
	b := []byte(strings.ToLower(prefix + "-" + fault))
	for i, c := range b {
		if !isAlnum(c) {
			b[i] = '-'
		}
	}
	base := strings.Trim(string(b), "-")
	if limit := 63 - suffixLen - 1; len(base) > limit {
		base = strings.TrimRight(base[:limit], "-")
	}
	return base + "-" + randomSuffix(suffixLen)
}

// randomSuffix returns n characters of [a-z0-9] from crypto/rand: object
// names must not repeat across runs, which a run's seed would make them do.
func randomSuffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Token returns 8 random characters of [a-z0-9], valid in names and label
// values: a mark for the objects of one action.
func Token() string { return randomSuffix(8) }
