//go:build unix

package cli

import "golang.org/x/sys/unix"

// stderrWidth is the width of the terminal on descriptor 2, 0 when it is
// none or does not say.
func stderrWidth() int {
	ws, err := unix.IoctlGetWinsize(2, unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
