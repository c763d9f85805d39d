//go:build race

package client

// clientRaceEnabled reports a -race build, where the race runtime itself
// allocates on paths that allocate nothing otherwise.
const clientRaceEnabled = true
