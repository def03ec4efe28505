//go:build !linux

package docs_test

import (
	"errors"
	"runtime"
	"testing"
)

var errNoNamespace = errors.New("network namespaces are Linux's; this is " + runtime.GOOS)

func rerunInNamespace(*testing.T, string) error { return errNoNamespace }

func loopbackUp() error { return errNoNamespace }
