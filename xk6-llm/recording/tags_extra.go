package recording

import (
	"iter"
	"slices"
	"strings"
)

// The separators of an encoded set of extra tags: a pair is KEY kvSep
// VALUE, pairs are joined by pairSep. Both are control characters a tag
// (text a script writes) does not hold; ExtraTags drops a pair that does.
const (
	kvSep   = "\x1f"
	pairSep = "\x1e"
)

// ExtraTags encodes tags (key → value, no empty key) as Tags.Extra: its
// pairs sorted by key, so that the same tags always give the same string.
// A pair whose key or value holds a separator is left out.
func ExtraTags(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	keys := make([]string, 0, len(tags))
	for k, v := range tags {
		if k == "" || strings.ContainsAny(k, kvSep+pairSep) || strings.ContainsAny(v, kvSep+pairSep) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(pairSep)
		}
		b.WriteString(k)
		b.WriteString(kvSep)
		b.WriteString(tags[k])
	}
	return b.String()
}

// ExtraPairs iterates over the pairs of an encoded set of extra tags, in
// key order.
func ExtraPairs(extra string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for extra != "" {
			pair, rest, _ := strings.Cut(extra, pairSep)
			extra = rest
			k, v, _ := strings.Cut(pair, kvSep)
			if !yield(k, v) {
				return
			}
		}
	}
}

// ExtraGet is the value of key in an encoded set of extra tags.
func ExtraGet(extra, key string) (string, bool) {
	for k, v := range ExtraPairs(extra) {
		if k == key {
			return v, true
		}
	}
	return "", false
}

// ExtraWith is extra with key set to value (value "" removes key).
func ExtraWith(extra, key, value string) string {
	m := ExtraMap(extra)
	if value == "" {
		delete(m, key)
	} else {
		m[key] = value
	}
	return ExtraTags(m)
}

// ExtraMap decodes an encoded set of extra tags (an empty map for "").
func ExtraMap(extra string) map[string]string {
	m := map[string]string{}
	for k, v := range ExtraPairs(extra) {
		m[k] = v
	}
	return m
}

// ExtraIncludes reports whether every pair of want is in got (both encoded
// by ExtraTags).
func ExtraIncludes(got, want string) bool {
	if want == "" || want == got {
		return true
	}
	for k, v := range ExtraPairs(want) {
		if g, ok := ExtraGet(got, k); !ok || g != v {
			return false
		}
	}
	return true
}
