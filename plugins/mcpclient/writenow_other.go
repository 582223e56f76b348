//go:build !unix

package mcpclient

// writeFD writes nothing here: where pipes do not take deadlines (Windows)
// lineFraming has no descriptor for it, and every write is one that waits.
func writeFD(uintptr, []byte) (int, error) { return 0, nil }
