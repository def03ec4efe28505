package netfault_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// closed Network, or a cleared fault, must end every pipeline it ran.
//
// One goroutine is Toxiproxy's own and is let through: the no-op stage at
// the head of a link's chain, which on a busy machine can still be
// handing its last chunk on when the link's connection is closed (CI saw
// it blocked on that send after the tests had passed). Every goroutine
// of Mercado's, and Toxiproxy's other stages, are still checked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"))
}
