//go:build !race

package history

// raceEnabled reports that the race detector slows everything down (the
// pure-Go SQLite most of all): the seeded-trial tests run fewer trials.
const raceEnabled = false
