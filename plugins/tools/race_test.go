//go:build race

package tools_test

// The race detector slows every round down but widens race windows, so
// stress tests need fewer rounds under it.
func init() { raceEnabled = true }
