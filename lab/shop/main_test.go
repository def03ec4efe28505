package shop_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// stopped shop must give back everything its five services started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
