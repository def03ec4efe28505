package lab

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time, user and system: the in-process
// shop's cost, with the load generator's own share in it. Windows has no
// getrusage: GetProcessTimes gives the same two times, in 100 ns units.
func processCPU() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	return filetimeSpan(kernel) + filetimeSpan(user)
}

// filetimeSpan is a FILETIME that holds a span, not a date (Filetime's
// Nanoseconds would count it from 1601).
func filetimeSpan(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
