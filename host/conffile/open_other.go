//go:build !unix

package conffile

import "os"

// open opens path for reading once Stat (which follows links) says it is a
// regular file: there is no O_NONBLOCK here, and a pipe or a device is not
// opened at all. Read checks the opened file again.
func open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(fi.Mode()); err != nil {
		return nil, err
	}
	return os.Open(path)
}
