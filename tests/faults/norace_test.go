//go:build unix && !race

package faults

// raceEnabled mirrors the test binary's -race into the harness build.
const raceEnabled = false
