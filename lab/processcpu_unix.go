//go:build unix

package lab

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time, user and system: the in-process
// shop's cost, with the load generator's own share in it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
