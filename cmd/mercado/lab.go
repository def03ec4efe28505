package main

import (
	"context"
	"io"
)

func runLab(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return usagef("lab: not yet")
}
