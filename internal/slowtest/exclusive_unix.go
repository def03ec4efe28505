//go:build unix

package slowtest

import (
	"os"
	"syscall"
)

// lock waits for an exclusive lock on f.
func lock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
