//go:build !unix

package cli

// stderrWidth is 0 where the width is not read: the live line is cut at
// 100 columns.
func stderrWidth() int { return 0 }
