//go:build unix

package mcpclient

import "syscall"

// writeFD writes what of b the non-blocking descriptor fd takes now
// (lineFraming.writeNow): all of it, a part, or nothing when it is full.
func writeFD(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := syscall.Write(int(fd), b[n:])
		if k > 0 {
			n += k
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return n, nil
		case err != nil:
			return n, err
		case k == 0:
			return n, nil
		}
	}
	return n, nil
}
