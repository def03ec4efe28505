package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/lab/shop"
)

const networkFaultUsage = `Usage: mercado fault --network [LINK] [SPEC | --clear] [flags]

Shows or changes the network faults between the services, through the
wire's admin API (the fault proxies of a shop served with
--network-proxy, or of mercado serve netproxy). With no LINK it lists
every link; with a LINK and no SPEC it shows that one.

  mercado fault --network orders-shipping latency=200ms,jitter=50ms
  mercado fault --network orders-shipping stall
  mercado fault --network gateway-orders --clear
  mercado fault --network --clear

The links (caller-callee): %s

A SPEC is faults separated by ";", each a kind and its settings:
  latency=200ms[,jitter=50ms]   every chunk delayed (default direction: down)
  bandwidth=64                  KB/s (default direction: down)
  stall                         data stops, the sockets stay open (both)
  reset                         the connection is reset (both)
  down                          the port refuses connections (no direction)
and direction=up|down|both (up: the caller's requests, down: the answers).

Flags:
`

// networkAdminURL is the wire's admin API of a shop served on this
// machine with --network-proxy.
var networkAdminURL = "http://localhost:" + shop.DefaultNetworkAdminPort

// runNetworkFault is `mercado fault --network`: args are what follows
// --network.
func runNetworkFault(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && len(pos) < 2 {
		pos, args = append(pos, args[0]), args[1:]
	}
	fs := flag.NewFlagSet("mercado fault --network", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, networkFaultUsage, netfault.LinkList())
		fs.PrintDefaults()
	}
	adminURL := fs.String("admin", networkAdminURL, "the wire's admin URL")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	clear := fs.Bool("clear", false, "clear the link's faults (every link's without LINK)")
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	link, specText := "", ""
	if len(pos) > 0 {
		link = pos[0]
		if err := netfault.CheckLink(link); err != nil {
			return usagef("fault --network: %w", err)
		}
	}
	if len(pos) > 1 {
		specText = pos[1]
	}
	var spec netfault.Spec
	switch {
	case specText != "" && *clear:
		return usagef("fault --network: give a SPEC or --clear, not both")
	case specText != "":
		var err error
		if spec, err = netfault.Parse(specText); err != nil {
			return usagef("fault --network %s: %w", link, err)
		}
	}
	c := admin.Client{URL: strings.TrimSuffix(*adminURL, "/"), Token: *token}
	var v admin.NetworkView
	var err error
	switch {
	case *clear:
		v, err = c.ClearNetwork(ctx, link)
	case specText != "":
		v, err = c.SetNetwork(ctx, link, spec)
	default:
		v, err = c.Network(ctx)
	}
	if errors.Is(err, admin.ErrNoAnswer) {
		return fmt.Errorf("fault --network: no fault proxy answers at %s: start the shop with `go run ./cmd/mercado serve all --network-proxy`", c.URL)
	}
	if err != nil {
		return fmt.Errorf("fault --network: %w", err)
	}
	for _, l := range v.Links {
		if link == "" || l.Name == link {
			fmt.Fprintf(stdout, "%-15s %s\n", l.Name, l.Faults)
		}
	}
	return nil
}
