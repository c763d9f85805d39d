//go:build race

package llm_test

// raceEnabled reports a -race build, where the timing tests skip themselves
// (the detector's cost would be what they measure).
const raceEnabled = true
