package main

import (
	"slices"
	"testing"
)

// TestNodePackagesFindsEveryPackageWithNodeTests: from the repository root
// the runner finds the packages that declare Test...OnARealNode functions,
// in test files of either package, and only those.
func TestNodePackagesFindsEveryPackageWithNodeTests(t *testing.T) {
	t.Chdir("../../..")
	pkgs, tests, err := nodePackages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./faults/replica/", "./experiments/", "./cmd/llmchaos/"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("packages %v: %s missing", pkgs, want)
		}
	}
	for _, notWant := range []string{"./internal/k8stest/", "./internal/k8stest/nodetests/", "./sim/server/"} {
		if slices.Contains(pkgs, notWant) {
			t.Errorf("packages %v: %s has no node test", pkgs, notWant)
		}
	}
	if tests < 7 {
		t.Errorf("%d node tests found; the three packages above have 7", tests)
	}
}
