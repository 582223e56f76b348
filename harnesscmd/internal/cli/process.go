package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// ProcessMain is Main for a harness binary: the process's streams, whether
// each is a terminal, and its signals. cmd/harness and the conformance
// suite's binary (tests/conformance/harness) both call it, so the two run
// alike.
func ProcessMain(args []string) int {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// Asking for SIGPIPE (and dropping it) makes a write to a closed stdout
	// return EPIPE instead of killing the process, so `harness tools | head
	// -1` stops its servers and exits through Main (pipe.go). Not
	// signal.Ignore: an ignored signal stays ignored in the servers we
	// start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return Main(context.Background(), args, Env{
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Signals:   signals,
		StdinTTY:  isTerminal(os.Stdin),
		StdoutTTY: isTerminal(os.Stdout),
		StderrTTY: isTerminal(os.Stderr),
	})
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
