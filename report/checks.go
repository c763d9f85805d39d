package report

import (
	"strconv"
	"strings"
)

// Check is one check() of a script by name in its group: how often it
// passed and failed (k6's root_group checks).
type Check struct {
	// Group is the group's path ("" at the root, "::outer::inner").
	Group  string `json:"group,omitempty"`
	Name   string `json:"name"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

// OK reports whether the check never failed.
func (c Check) OK() bool { return c.Fails == 0 }

// Label is the check's name with its group, as the reports name it:
// "name" at the root, "outer › inner › name" in a group.
func (c Check) Label() string {
	if c.Group == "" {
		return c.Name
	}
	return strings.Join(append(strings.Split(strings.TrimPrefix(c.Group, "::"), "::"), c.Name), " › ")
}

// Tally is "↳ 94% — ✓ 47 / ✗ 3", k6's line under a check that failed.
func (c Check) Tally() string {
	total := c.Passes + c.Fails
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(c.Passes) / float64(total)
	}
	return "↳ " + strconv.FormatFloat(pct, 'f', 0, 64) + "% — ✓ " + strconv.FormatInt(c.Passes, 10) + " / ✗ " + strconv.FormatInt(c.Fails, 10)
}

// writeChecks writes the checks as k6's summary does, by group: "✓ name"
// for one that always passed, "✗ name" with its tally for one that
// failed.
func writeChecks(b *strings.Builder, d *Document, color bool) {
	if len(d.Checks) == 0 {
		return
	}
	b.WriteString("\nchecks\n")
	group := ""
	for _, c := range d.Checks {
		indent := "  "
		if c.Group != "" {
			if c.Group != group {
				b.WriteString("  █ " + strings.Join(strings.Split(strings.TrimPrefix(c.Group, "::"), "::"), " › ") + "\n")
			}
			indent = "    "
		}
		group = c.Group
		if c.OK() {
			b.WriteString(indent + paint("✓ "+c.Name, ansiGreen, color) + "\n")
			continue
		}
		b.WriteString(indent + paint("✗ "+c.Name, ansiRed, color) + "\n")
		b.WriteString(indent + "  " + c.Tally() + "\n")
	}
}
