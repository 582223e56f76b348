// Command pipeecho writes every line it reads on stdin back to stdout, at
// once. It is the far end of the benchmark suite's raw pipe round trip: the
// physical limit of a request and its answer between two processes.
package main

import (
	"bufio"
	"errors"
	"os"
)

func main() {
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := os.Stdout.Write(line); werr != nil {
				os.Exit(1)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
