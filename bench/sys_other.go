//go:build !unix

package bench

import "time"

// The benchmarks measure on Linux (they read /proc); elsewhere they only
// build. processCPU reports nothing and alive knows no process.

func processCPU() time.Duration { return 0 }

func alive(int) bool { return false }
