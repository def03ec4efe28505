package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
)

const consoleUsage = `Usage: mercado lab console [flags]

Starts the five services in this process (in-memory stores, the fault
proxies between them on) and serves the live console on the gateway's
admin listener, on loopback: open the URL it prints. The console shows
the chain hop by hop, with each hop's remaining budget, and live charts;
it switches the mode, sets faults, sends traffic and runs scenarios.
Stops gracefully on SIGINT or SIGTERM. (serve all, serve gateway, docker
compose and Kubernetes serve the same console at /console/ on the
gateway's admin port: docs/console.md.)

Flags:
`

func runConsole(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := shop.DefaultConfig("127.0.0.1")
	cfg.Network = true
	fs := flag.NewFlagSet("mercado lab console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, consoleUsage)
		fs.PrintDefaults()
	}
	level := slog.LevelWarn
	fs.TextVar(&level, "log-level", level, "log level of the services: debug, info, warn or error")
	cfg.Shared.RegisterFlags(fs)
	ephemeral := fs.Bool("ephemeral-ports", false, "listen on free loopback ports instead of 8080-8084, 9080-9085")
	fs.BoolVar(&cfg.Network, "network-proxy", cfg.Network, "put a fault proxy on every link between the services (the console's network faults)")
	preset := fs.String("preset", "", "a lesson preset to apply once the shop is up, as its button does: "+console.PresetNames())
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if *ephemeral {
		cfg.UseEphemeralPorts()
	}
	if err := cfg.Validate(); err != nil {
		return usagef("lab console: %w", err)
	}
	if *preset != "" {
		if _, err := console.LookupPreset(*preset); err != nil {
			return usagef("lab console: --preset: %w", err)
		}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Gateway.Console = console.Gateway(log)
	s, err := shop.Start(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("lab console: %w", portTaken(err, portTakenHint))
	}
	page := "http://" + s.Gateway.AdminAddr + "/console/"
	if *preset != "" {
		res, err := console.ApplyPreset(ctx, page, cfg.Shared.AdminToken, *preset)
		if err != nil {
			return errors.Join(fmt.Errorf("lab console: %w", err), s.Stop())
		}
		fmt.Fprintf(stdout, "Lesson preset %s: %s\n", res.Preset.Title, res.Preset.Watch)
	}
	fmt.Fprintf(stdout, "Mercado's live console: %s\n", page)
	fmt.Fprintf(stdout, "The shop's public API:  %s (Ctrl-C stops both)\n", s.GatewayURL())
	return s.Wait()
}
