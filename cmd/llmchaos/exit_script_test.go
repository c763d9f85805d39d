package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeListsTheScriptExitCodes: README's exit-code table has a row
// for each of a script run's k6 codes, with its meaning in the script
// column.
func TestReadmeListsTheScriptExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme, "| code | meaning | script run (`run FILE.js`: k6's codes) |") {
		t.Fatal("README's exit-code table lacks its script-run column")
	}
	for _, code := range scriptExitCodes {
		row := "| " + strconv.Itoa(code) + " | — | "
		if !strings.Contains(readme, row) {
			t.Errorf("README's exit-code table lacks the row of %d (%q)", code, row)
		}
	}
}
