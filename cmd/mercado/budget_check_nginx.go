package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tufanbarisyildirim/gonginx/config"
	"github.com/tufanbarisyildirim/gonginx/parser"
	"go.yaml.in/yaml/v3"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
)

// nginx's defaults for the timeouts the check reads (ngx_http_proxy_module,
// ngx_http_upstream_module).
const (
	nginxDefaultTimeout   = 60 * time.Second // proxy_connect_timeout, proxy_read_timeout
	nginxDefaultKeepalive = 60 * time.Second // an upstream's keepalive_timeout
)

// proxiesFromNginx reads an nginx configuration: one Proxy per location
// that passes requests on (proxy_pass), with the timeouts in force there,
// each inherited from the server or http level when the location does not
// set it, and the keepalive of the upstream it passes to.
func proxiesFromNginx(path string) ([]budgetcheck.Proxy, error) {
	p, err := parser.NewParser(path, parser.WithSkipComments())
	if err != nil {
		return nil, err
	}
	conf, err := p.Parse()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	upstreams := map[string]config.IBlock{}
	for _, u := range conf.FindDirectives("upstream") {
		if ps := u.GetParameters(); len(ps) > 0 && u.GetBlock() != nil {
			upstreams[ps[0].Value] = u.GetBlock()
		}
	}
	var out []budgetcheck.Proxy
	var errs []string
	// walk visits a block's directives with the values inherited so far.
	var walk func(b config.IBlock, inherited map[string]config.IDirective, where string)
	walk = func(b config.IBlock, inherited map[string]config.IDirective, where string) {
		here := map[string]config.IDirective{}
		for k, v := range inherited {
			here[k] = v
		}
		for _, d := range b.GetDirectives() {
			if d.GetBlock() == nil {
				here[d.GetName()] = d
			}
		}
		for _, d := range b.GetDirectives() {
			name := d.GetName()
			if d.GetBlock() != nil && name != "upstream" {
				w := where
				if name == "location" {
					w = "location " + params(d)
				}
				walk(d.GetBlock(), here, w)
			}
			if name != "proxy_pass" {
				continue
			}
			px := budgetcheck.Proxy{Where: fmt.Sprintf("%s:%d %s", path, d.GetLine(), where)}
			var perr error
			get := func(directive string, def time.Duration) time.Duration {
				v, ok := here[directive]
				if !ok {
					return def
				}
				t, err := nginxTime(params(v))
				if err != nil && perr == nil {
					perr = fmt.Errorf("%s:%d: %s %w", path, v.GetLine(), directive, err)
				}
				return t
			}
			px.Connect = get("proxy_connect_timeout", nginxDefaultTimeout)
			px.Read = get("proxy_read_timeout", nginxDefaultTimeout)
			// Keepalive to the upstream needs HTTP/1.1 (nginx speaks 1.0
			// to an upstream unless told, and closes each connection).
			host := strings.TrimPrefix(strings.TrimPrefix(params(d), "http://"), "https://")
			host, _, _ = strings.Cut(host, "/")
			if u, ok := upstreams[host]; ok {
				ka := u.FindDirectives("keepalive")
				v, ok := here["proxy_http_version"]
				px.KeepAlive = len(ka) > 0 && ok && params(v) == "1.1"
				px.KeepAliveTimeout = nginxDefaultKeepalive
				if t := u.FindDirectives("keepalive_timeout"); len(t) > 0 {
					px.KeepAliveTimeout, err = nginxTime(params(t[0]))
					if err != nil && perr == nil {
						perr = fmt.Errorf("%s:%d: keepalive_timeout %w", path, t[0].GetLine(), err)
					}
				}
			}
			if perr != nil {
				errs = append(errs, perr.Error())
				continue
			}
			out = append(out, px)
		}
	}
	walk(conf.Block, map[string]config.IDirective{}, "")
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no location passes requests on (proxy_pass)", path)
	}
	return out, nil
}

func params(d config.IDirective) string {
	var s []string
	for _, p := range d.GetParameters() {
		s = append(s, p.Value)
	}
	return strings.Join(s, " ")
}

var nginxTimePart = regexp.MustCompile(`^(\d+)(ms|s|m|h|d)?`)

// nginxTime reads nginx's time syntax: "300ms", "60s", "1h30m", a bare
// number of seconds.
func nginxTime(v string) (time.Duration, error) {
	units := map[string]time.Duration{"ms": time.Millisecond, "": time.Second, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	rest, total := v, time.Duration(0)
	for rest != "" {
		m := nginxTimePart.FindStringSubmatch(rest)
		if m == nil {
			return 0, fmt.Errorf("%q: want an nginx time such as 300ms, 60s or 30m", v)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		total += time.Duration(n) * units[m[2]]
		rest = rest[len(m[0]):]
	}
	if v == "" {
		return 0, fmt.Errorf("empty: want an nginx time such as 300ms, 60s or 30m")
	}
	return total, nil
}

// nginxConfigs are the nginx configurations a compose file's services
// mount over /etc/nginx/nginx.conf, as paths from the compose file's
// folder; volumes in the long syntax are left to docker compose.
func nginxConfigs(path string, data []byte) []string {
	var file struct {
		Services map[string]struct {
			Volumes []yaml.Node `yaml:"volumes"`
		} `yaml:"services"`
	}
	if yaml.Unmarshal(data, &file) != nil {
		return nil
	}
	var out []string
	for _, svc := range file.Services {
		for _, v := range svc.Volumes {
			if v.Kind != yaml.ScalarNode {
				continue
			}
			parts := strings.Split(v.Value, ":")
			if len(parts) >= 2 && parts[1] == "/etc/nginx/nginx.conf" {
				src := parts[0]
				if !filepath.IsAbs(src) {
					src = filepath.Join(filepath.Dir(path), src)
				}
				out = append(out, src)
			}
		}
	}
	return out
}

// addNginx reads each configuration into s's proxies.
func addNginx(s *budgetcheck.Deployment, paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return err
		}
		px, err := proxiesFromNginx(p)
		if err != nil {
			return err
		}
		s.Proxies = append(s.Proxies, px...)
	}
	return nil
}
