package js

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"sync"
)

// groupSeparator joins group and check names into k6's paths:
// "::outer::inner" for a group, "::outer::status 200" for a check in it;
// the root group's path is "".
const groupSeparator = "::"

// checkTally counts each check's passes and fails by the group it ran in,
// for handleSummary's root_group. Groups and checks keep the order they
// were first seen in. Safe for concurrent use.
type checkTally struct {
	mu     sync.Mutex
	groups []string               // paths of the groups seen, root excluded
	seen   map[string]bool        // the paths in groups
	checks []checkKey             // in first-seen order
	counts map[checkKey]*[2]int64 // passes, fails
}

// checkKey is a check by its group's path and name.
type checkKey struct{ group, name string }

// group notes that the group at path ran.
func (t *checkTally) group(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addGroup(path)
}

// addGroup records path and its parents; t.mu is held.
func (t *checkTally) addGroup(path string) {
	if path == "" || t.seen[path] {
		return
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if i := strings.LastIndex(path, groupSeparator); i > 0 {
		t.addGroup(path[:i])
	}
	t.seen[path] = true
	t.groups = append(t.groups, path)
}

// add counts one run of check name in the group at path.
func (t *checkTally) add(path, name string, pass bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addGroup(path)
	k := checkKey{path, name}
	c, ok := t.counts[k]
	if !ok {
		if t.counts == nil {
			t.counts = map[checkKey]*[2]int64{}
		}
		c = new([2]int64)
		t.counts[k] = c
		t.checks = append(t.checks, k)
	}
	if pass {
		c[0]++
	} else {
		c[1]++
	}
}

// Checks returns the root group of the run's groups and checks, with each
// check's passes and fails, in k6's shape.
func (s *Shared) Checks() SummaryGroup {
	t := &s.checks
	t.mu.Lock()
	defer t.mu.Unlock()
	groups := map[string]*SummaryGroup{"": newSummaryGroup("", "")}
	for _, p := range t.groups {
		i := strings.LastIndex(p, groupSeparator)
		groups[p] = newSummaryGroup(p[i+len(groupSeparator):], p)
	}
	for _, k := range t.checks {
		c := t.counts[k]
		path := k.group + groupSeparator + k.name
		g := groups[k.group]
		g.Checks = append(g.Checks, SummaryCheck{Name: k.name, Path: path, ID: pathID(path), Passes: c[0], Fails: c[1]})
	}
	// Attach the groups to their parents, deepest first, so that each
	// is complete when it is copied into its parent.
	for i := len(t.groups) - 1; i >= 0; i-- {
		p := t.groups[i]
		parent := p[:strings.LastIndex(p, groupSeparator)]
		pg := groups[parent]
		pg.Groups = append([]SummaryGroup{*groups[p]}, pg.Groups...)
	}
	return *groups[""]
}

// newSummaryGroup is an empty group (empty lists, never null in JSON).
func newSummaryGroup(name, path string) *SummaryGroup {
	return &SummaryGroup{Name: name, Path: path, ID: pathID(path), Groups: []SummaryGroup{}, Checks: []SummaryCheck{}}
}

// pathID is k6's id of a group or check: the MD5 of its path, in hex.
func pathID(path string) string {
	sum := md5.Sum([]byte(path))
	return hex.EncodeToString(sum[:])
}
