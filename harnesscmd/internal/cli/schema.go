package cli

import (
	"io"

	"github.com/harness-go/harness/host"
)

// printSchema is `harness schema`.
func printSchema(w io.Writer) error {
	b, err := host.Schema()
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
