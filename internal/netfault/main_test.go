package netfault_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// closed Network, or a cleared fault, must end every pipeline it ran.
//
// Two goroutines are Toxiproxy's own and are let through. Removing a
// stall's timeout toxic closes the toxic's stage and stops reading its
// input, while the stage before it (the no-op at the head of the link)
// still writes there: a chunk the caller sends after the clear blocks
// that stage (NoopToxic.Pipe), and the next one blocks the link's reader
// behind it (ChanWriter.Write). Both are blocked on a channel nobody
// reads, in Toxiproxy's code; they happen only when the caller sends
// before it notices the connection closed, which a busy machine makes
// likelier (CI saw the first, a `go test ./...` on 2 cores the second).
// Every goroutine of Mercado's, and Toxiproxy's other stages, are still
// checked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"))
}
