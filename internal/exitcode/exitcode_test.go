package exitcode

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestWorst(t *testing.T) {
	tests := []struct {
		codes []int
		want  int
	}{
		{nil, 0},
		{[]int{0, 0}, 0},
		{[]int{0, 99, 96}, 99},
		{[]int{95, 96}, 96},
		{[]int{99, 2}, 2},
		{[]int{99, 1, 2}, 1},
		{[]int{1, 98}, 98},
		{[]int{98, 97, 99}, 97},
		{[]int{0, 42}, 42}, // unknown: ranks as 1
		{[]int{42, 98}, 98},
	}
	for _, tt := range tests {
		if got := Worst(tt.codes...); got != tt.want {
			t.Errorf("Worst(%v) = %d, want %d", tt.codes, got, tt.want)
		}
	}
}

// exitCodesPage is the exit code reference seen from this package's directory.
const exitCodesPage = "../../docs/exit-codes.md"

// TestReadmeTableHasEveryCode: the exit code table (docs/exit-codes.md) has a row for
// every code (a row may list several: "3, 4"), and no row for a code that
// is not one; and it gives the suite's order, Rank.
func TestReadmeTableHasEveryCode(t *testing.T) {
	b, err := os.ReadFile(exitCodesPage)
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	var rows []int
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for c := range strings.SplitSeq(cells[1], ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
				rows = append(rows, n)
			}
		}
	}
	for _, c := range All {
		if !slices.Contains(rows, c) {
			t.Errorf("docs/exit-codes.md's table has no row for %d", c)
		}
	}
	for _, c := range rows {
		if !slices.Contains(All, c) {
			t.Errorf("docs/exit-codes.md's table has a row for %d, which is no exit code of exitcode.All", c)
		}
	}
	order := make([]string, len(Rank))
	for i, c := range Rank {
		order[i] = strconv.Itoa(c)
	}
	if o := strings.Join(order, " > "); !strings.Contains(section, o) {
		t.Errorf("docs/exit-codes.md's table does not give the suite's order %s", o)
	}
}

// TestReadmeTableHasTheScriptColumn: the exit code table has a
// column for script runs, and each script-only code's row says what it
// means there.
func TestReadmeTableHasTheScriptColumn(t *testing.T) {
	b, err := os.ReadFile(exitCodesPage)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme, "| code | meaning | script run (`run FILE.js`: k6's codes) |") {
		t.Fatal("docs/exit-codes.md's table lacks its script-run column")
	}
	for _, code := range Script {
		if row := "| " + strconv.Itoa(code) + " | — | "; !strings.Contains(readme, row) {
			t.Errorf("docs/exit-codes.md's table lacks the script row of %d (%q)", code, row)
		}
	}
}
