package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
)

// proxyLink is one link `serve netproxy` proxies: where it listens and
// the callee it forwards to.
type proxyLink struct{ name, listen, upstream string }

// proxyLinks is the --link flag: LINK=LISTEN,UPSTREAM, repeatable, or
// several separated by ";" (as MERCADO_LINK takes them).
type proxyLinks []proxyLink

func (l *proxyLinks) String() string {
	var parts []string
	for _, p := range *l {
		parts = append(parts, p.name+"="+p.listen+","+p.upstream)
	}
	return strings.Join(parts, ";")
}

func (l *proxyLinks) Set(v string) error {
	for part := range strings.SplitSeq(v, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addrs, ok := strings.Cut(part, "=")
		listen, upstream, ok2 := strings.Cut(addrs, ",")
		if !ok || !ok2 || listen == "" || upstream == "" {
			return fmt.Errorf("%q: want LINK=LISTEN,UPSTREAM, such as orders-shipping=:8284,shipping:8084", part)
		}
		if err := netfault.CheckLink(name); err != nil {
			return err
		}
		if slices.ContainsFunc(*l, func(p proxyLink) bool { return p.name == name }) {
			return fmt.Errorf("%s: given twice", name)
		}
		*l = append(*l, proxyLink{name, strings.TrimSpace(listen), strings.TrimSpace(upstream)})
	}
	return nil
}

// netproxyService is `mercado serve netproxy`: the fault proxies alone,
// with the wire's admin API, for a deployment whose services run apart
// (docker-compose.yml points orders and the gateway at it).
func netproxyService() service {
	var links proxyLinks
	adminAddr := "127.0.0.1:" + shop.DefaultNetworkAdminPort
	var token string
	var insecure bool
	register := func(fs *flag.FlagSet) {
		fs.Var(&links, "link", `a link to proxy, "LINK=LISTEN,UPSTREAM" (such as orders-shipping=:8284,shipping:8084); repeatable, or ";"-separated`)
		fs.StringVar(&adminAddr, "admin-addr", adminAddr,
			"the wire's admin listen address (/healthz, /readyz, /metrics, /admin/network); beyond loopback it needs --admin-token or --admin-insecure")
		fs.StringVar(&token, "admin-token", token, "bearer token required for admin changes (reads stay open)")
		fs.BoolVar(&insecure, "admin-insecure", insecure,
			"allow an admin listener other machines can reach without --admin-token (anyone reaching it may set network faults)")
	}
	validate := func() error {
		var errs []error
		if len(links) == 0 {
			errs = append(errs, fmt.Errorf("link: name at least one link to proxy (%s)", netfault.LinkList()))
		}
		if adminAddr == "" {
			errs = append(errs, errors.New("admin-addr: must not be empty"))
		} else if token == "" && !insecure && !serve.IsLoopback(adminAddr) {
			errs = append(errs, fmt.Errorf("admin-addr: %s is reachable from other machines, and no --admin-token is set: set one, "+
				"or listen on 127.0.0.1, or pass --admin-insecure to let anyone who reaches it set network faults", adminAddr))
		}
		return errors.Join(errs...)
	}
	describe := func() []settings { return []settings{{"netproxy", flagValues(register, nil)}} }
	start := func(ctx context.Context, log *slog.Logger) (waiter, error) {
		n := netfault.New()
		for _, l := range links {
			addr, err := n.Add(l.name, l.listen, l.upstream)
			if err != nil {
				n.Close()
				return nil, err
			}
			log.Info("network link", "service", "netproxy", "link", l.name, "listen", addr, "upstream", l.upstream)
		}
		h := admin.NetworkHandler(admin.NetworkOptions{Network: n, Token: token, Log: log.With("service", "netproxy")})
		return serve.StartAdminOnly(ctx, "netproxy", adminAddr, h, n.Close, log)
	}
	return service{register, validate, describe, start}
}
