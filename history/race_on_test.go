//go:build race

package history

// raceEnabled reports a -race build (see skipUnderRace).
const raceEnabled = true
