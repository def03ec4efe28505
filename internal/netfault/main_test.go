package netfault_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// closed Network, or a cleared fault, must end every pipeline it ran.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
