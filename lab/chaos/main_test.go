package chaos_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// client, transport and in-process shop the tests start must be stopped.
// Its cleanup removes the binary the chaos tests built.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binDir != "" {
			_ = os.RemoveAll(binDir)
		}
		os.Exit(code)
	}))
}
