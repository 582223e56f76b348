//go:build !race

package e2e

// raceEnabled mirrors the test binary's -race into the harness build.
const raceEnabled = false
