// Package slowtest marks the tests that take minutes, or a browser: the
// documented commands, whole lab runs, the report's and the console's
// Chromium tests. A plain `go test ./...` skips them, so a newcomer's
// run ends in about two minutes; with MERCADO_SLOW_TESTS=1 they run, and
// .ci/run sets it, so CI runs every one of them.
package slowtest

import (
	"os"
	"testing"
)

// Env is the environment variable that runs the slow tests.
const Env = "MERCADO_SLOW_TESTS"

// On reports whether the slow tests run.
func On() bool { return os.Getenv(Env) != "" }

// Require skips t, saying why and how to run it, unless the slow tests run.
func Require(t testing.TB, why string) {
	t.Helper()
	if !On() {
		t.Skipf("slow (%s): run with %s=1, as .ci/run does", why, Env)
	}
}
