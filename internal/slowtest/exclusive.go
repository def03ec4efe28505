package slowtest

import (
	"os"
	"path/filepath"
	"testing"
)

// LockFile is the file Exclusive locks, in the system's temporary
// directory, shared by every test process on the machine.
const LockFile = "mercado-load-tests.lock"

// Exclusive gives t the machine's turn to send timed load, until t ends.
// go test runs several packages' tests at once, and two tests that each
// run a load generator on a schedule make each other's runs INVALID (the
// generator falls behind on a busy machine). A test that sends load and
// needs its runs to be measurements takes its turn; a second one waits
// for it. The lock is the operating system's, so a test that dies
// releases it.
func Exclusive(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("the load tests' lock: %v", err)
	}
	if err := lock(f); err != nil {
		_ = f.Close()
		t.Fatalf("the load tests' lock: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() }) // closing the file releases the lock
}
