package cli

import "io"

func printSchema(w io.Writer) error {
	_, err := io.WriteString(w, "{}\n")
	return err
}
