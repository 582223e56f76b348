//go:build !linux

package proc

// osHelper knows no mode beyond the portable ones.
func osHelper(string) (int, bool) { return 0, false }
