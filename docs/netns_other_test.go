//go:build !linux

package docs_test

import (
	"errors"
	"runtime"
	"testing"
)

// The documented commands run in a network namespace of their own, and
// network namespaces are Linux's: elsewhere the markers are checked, and
// the commands are not run.
var errNoNamespace = errors.New("network namespaces are Linux's; this is " + runtime.GOOS)

func rerunInNamespace(*testing.T, string) error { return errNoNamespace }

func runBlocks(t *testing.T, _ []runnable, _ string) { t.Fatal(errNoNamespace) }
