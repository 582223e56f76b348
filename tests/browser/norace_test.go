//go:build !race

package browser

// raceEnabled mirrors the test binary's -race into the harness build.
const raceEnabled = false
