//go:build race

package server

// raceEnabled reports that the race detector slows everything down.
const raceEnabled = true
