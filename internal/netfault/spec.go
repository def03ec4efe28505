package netfault

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is what a fault does to a link.
type Kind string

// The kinds of network fault.
const (
	// Latency delays every chunk of data by Latency, give or take Jitter
	// (Toxiproxy's latency toxic).
	Latency Kind = "latency"
	// Bandwidth lets RateKB kilobytes a second through (bandwidth toxic).
	Bandwidth Kind = "bandwidth"
	// Stall stops the data while both sockets stay open: a call waits for
	// as long as its deadline lets it, and one with none waits for ever
	// (the timeout toxic with a timeout of 0). Clearing a stall closes the
	// stalled connections; the callers connect again.
	Stall Kind = "stall"
	// Reset resets the connection as soon as data crosses it (the
	// reset_peer toxic): calls fail Unavailable.
	Reset Kind = "reset"
	// Down takes the link's port away: a connection is refused at once and
	// open ones are closed. It is the connect phase's fault; it takes no
	// direction and no other fault beside it.
	Down Kind = "down"
)

// Kinds are the kinds of fault, in the order the docs list them.
func Kinds() []Kind { return []Kind{Latency, Bandwidth, Stall, Reset, Down} }

// Direction is which way of a link a fault acts on.
type Direction string

// The directions. DirUp carries the caller's requests to the callee, DirDown
// the callee's responses back.
const (
	DirUp   Direction = "up"
	DirDown Direction = "down"
	DirBoth Direction = "both"
)

// DefaultDirection is the direction a fault of kind k acts on when its
// spec names none: latency and bandwidth act on the responses (a call
// pays the latency once, and the large messages are the answers); stall
// and reset on both ways, since the connection as a whole stops or
// breaks. Down has none.
func DefaultDirection(k Kind) Direction {
	switch k {
	case Latency, Bandwidth:
		return DirDown
	case Stall, Reset:
		return DirBoth
	}
	return ""
}

// Fault is one fault on one link.
type Fault struct {
	Kind Kind
	// Direction is the way the fault acts on; Parse fills in the kind's
	// default (DefaultDirection). Empty for Down.
	Direction Direction
	// Latency and Jitter, for Latency: each chunk is delayed by Latency
	// plus or minus up to Jitter, in whole milliseconds.
	Latency, Jitter time.Duration
	// RateKB, for Bandwidth, is the rate in kilobytes a second.
	RateKB int64
}

// Spec is a link's faults, at most one of each kind.
type Spec []Fault

// Limits of a spec's values.
const (
	MaxLatency = time.Minute
	MaxRateKB  = 1 << 20 // 1 GB/s
)

// Parse reads a link's faults: faults separated by ";", each a kind and
// its settings separated by ",":
//
//	latency=200ms[,jitter=50ms]   every chunk delayed (± jitter)
//	bandwidth=64                  64 KB/s
//	stall                         data stops, sockets stay open
//	reset                         the connection is reset
//	down                          the port refuses connections
//
// Every kind but down takes direction=up|down|both (default: see
// DefaultDirection). "" and "none" are no faults. An error names the
// setting it is about.
func Parse(text string) (Spec, error) {
	text = strings.TrimSpace(text)
	if text == "" || text == "none" {
		return Spec{}, nil
	}
	var spec Spec
	for part := range strings.SplitSeq(text, ";") {
		f, err := parseFault(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		spec = append(spec, f)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

func parseFault(text string) (Fault, error) {
	if text == "" {
		return Fault{}, errors.New(`empty fault (faults are separated by ";", a fault's settings by ",")`)
	}
	terms := strings.Split(text, ",")
	key, value, hasValue := strings.Cut(strings.TrimSpace(terms[0]), "=")
	f := Fault{Kind: Kind(strings.TrimSpace(key))}
	value = strings.TrimSpace(value)
	switch f.Kind {
	case Latency:
		d, err := parseMillis("latency", value, hasValue)
		if err != nil {
			return Fault{}, err
		}
		f.Latency = d
	case Bandwidth:
		if !hasValue {
			return Fault{}, errors.New("bandwidth: needs a rate in KB/s, such as bandwidth=64")
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return Fault{}, fmt.Errorf("bandwidth: %q is not a whole number of KB/s", clip(value))
		}
		f.RateKB = n
	case Stall, Reset, Down:
		if hasValue {
			return Fault{}, fmt.Errorf("%s: takes no value", f.Kind)
		}
	default:
		return Fault{}, fmt.Errorf("unknown fault %q (want latency, bandwidth, stall, reset or down)", clip(string(f.Kind)))
	}
	f.Direction = DefaultDirection(f.Kind)
	for _, term := range terms[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(term), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "direction" && f.Kind != Down:
			d := Direction(v)
			if d != DirUp && d != DirDown && d != DirBoth {
				return Fault{}, fmt.Errorf("%s: direction: %q must be up, down or both", f.Kind, clip(v))
			}
			f.Direction = d
		case k == "jitter" && f.Kind == Latency:
			d, err := parseMillis("latency: jitter", v, true)
			if err != nil {
				return Fault{}, err
			}
			f.Jitter = d
		default:
			return Fault{}, fmt.Errorf("%s: unknown setting %q (it takes %s)", f.Kind, clip(k), settingsOf(f.Kind))
		}
	}
	return f, nil
}

// settingsOf lists the settings a fault of kind k takes.
func settingsOf(k Kind) string {
	switch k {
	case Latency:
		return "jitter and direction"
	case Down:
		return "none"
	}
	return "direction"
}

// parseMillis reads a duration in whole milliseconds (Toxiproxy's unit).
func parseMillis(name, value string, hasValue bool) (time.Duration, error) {
	if !hasValue || value == "" {
		return 0, fmt.Errorf("%s: needs a duration, such as %s=200ms", name, name)
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration (such as 200ms)", name, clip(value))
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("%s: %v is not a whole number of milliseconds", name, d)
	}
	return d, nil
}

// clip shortens a client's text for an error message.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// Validate reports a spec the proxy cannot apply: values out of range, a
// kind twice, or down beside anything else.
func (s Spec) Validate() error {
	seen := map[Kind]bool{}
	for _, f := range s {
		if seen[f.Kind] {
			return fmt.Errorf("%s: given twice (one of each kind per link)", f.Kind)
		}
		seen[f.Kind] = true
		if err := f.validate(); err != nil {
			return err
		}
	}
	if seen[Down] && len(s) > 1 {
		return errors.New("down: takes no other fault beside it (a link that refuses carries nothing)")
	}
	return nil
}

func (f Fault) validate() error {
	switch f.Kind {
	case Latency:
		if f.Latency <= 0 || f.Latency > MaxLatency {
			return fmt.Errorf("latency: %v is outside (0, %v]", f.Latency, MaxLatency)
		}
		if f.Jitter < 0 || f.Jitter > f.Latency {
			return fmt.Errorf("latency: jitter: %v is outside 0 to the latency, %v", f.Jitter, f.Latency)
		}
	case Bandwidth:
		if f.RateKB < 1 || f.RateKB > MaxRateKB {
			return fmt.Errorf("bandwidth: %d is outside 1 to %d KB/s", f.RateKB, MaxRateKB)
		}
	case Stall, Reset, Down:
	default:
		return fmt.Errorf("unknown fault %q (want latency, bandwidth, stall, reset or down)", clip(string(f.Kind)))
	}
	if f.Kind != Latency && f.Jitter != 0 || f.Kind != Latency && f.Latency != 0 || f.Kind != Bandwidth && f.RateKB != 0 {
		return fmt.Errorf("%s: takes only %s", f.Kind, settingsOf(f.Kind))
	}
	switch {
	case f.Kind == Down && f.Direction != "":
		return errors.New("down: takes no direction")
	case f.Kind != Down && f.Direction != DirUp && f.Direction != DirDown && f.Direction != DirBoth:
		return fmt.Errorf("%s: direction: %q must be up, down or both", f.Kind, clip(string(f.Direction)))
	}
	return nil
}

// Has reports whether s has a fault of kind k.
func (s Spec) Has(k Kind) bool {
	for _, f := range s {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// String writes s in Parse's grammar, leaving out default directions:
// "none" when s is empty.
func (s Spec) String() string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.String()
	}
	return strings.Join(parts, ";")
}

// String writes f in Parse's grammar.
func (f Fault) String() string {
	var b strings.Builder
	switch f.Kind {
	case Latency:
		fmt.Fprintf(&b, "latency=%v", f.Latency)
		if f.Jitter > 0 {
			fmt.Fprintf(&b, ",jitter=%v", f.Jitter)
		}
	case Bandwidth:
		fmt.Fprintf(&b, "bandwidth=%d", f.RateKB)
	default:
		b.WriteString(string(f.Kind))
	}
	if f.Direction != DefaultDirection(f.Kind) {
		fmt.Fprintf(&b, ",direction=%s", f.Direction)
	}
	return b.String()
}

// MarshalText writes s as String does, so that JSON and YAML show a spec
// as its text.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads s with Parse.
func (s *Spec) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
