//go:build race

package conformance_test

// raceEnabled tells buildClient to build the client with the race detector
// too, so a data race in the plugin fails the scenario.
const raceEnabled = true
