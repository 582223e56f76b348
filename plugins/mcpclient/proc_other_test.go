//go:build !unix

package mcpclient

// The tests that look at processes read /proc and send signals: elsewhere
// they build but cannot run.

func running(int) bool { panic("running: the process checks need a unix system") }

func exists(int) bool { panic("exists: the process checks need a unix system") }

func kill(int) { panic("kill: the process checks need a unix system") }

func reapDaemon(int) { panic("reapDaemon: the process checks need a unix system") }
