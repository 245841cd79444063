//go:build race

package secrets

// raceEnabled: the race detector is on (tests that are slow under it
// take a sample of their corpus).
const raceEnabled = true
