package mode_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Mode is a flag.Value, so the services can bind it with fs.Var.
var _ flag.Value = (*mode.Mode)(nil)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    mode.Mode
		wantErr bool
	}{
		{"fragile", mode.Fragile, false},
		{"naive", mode.Naive, false},
		{"budgeted", mode.Budgeted, false},
		{"", "", true},
		{"Naive", "", true},
		{"BUDGETED", "", true},
		{" budgeted", "", true},
		{"fast", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := mode.Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), `"fragile", "naive" or "budgeted"`) {
				t.Errorf("error %q does not list the modes", err)
			}
		})
	}
}

func TestSet(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	m := mode.Budgeted
	fs.Var(&m, "mode", "")
	if err := fs.Parse([]string{"--mode=naive"}); err != nil {
		t.Fatal(err)
	}
	if m != mode.Naive || m.String() != "naive" {
		t.Errorf("after --mode=naive: %q", m)
	}
	if err := fs.Parse([]string{"--mode=slow"}); err == nil {
		t.Error("--mode=slow was accepted")
	}
	if m != mode.Naive {
		t.Errorf("a rejected value changed the mode to %q", m)
	}
}

func TestMechanisms(t *testing.T) {
	tests := []struct {
		m    mode.Mode
		want mode.Mechanisms
	}{
		{mode.Budgeted, mode.Mechanisms{
			Caps: true, EdgeDeadline: true, ClipToBudget: true, Admission: true, HonourCancel: true,
			Bulkheads: true, Breakers: true, Retries: mode.RetriesBudgeted, Outbox: true, Idempotency: true,
			Fanout: mode.FanoutParallel, Classes: true, Criticality: true, ConnectTimeout: true,
		}},
		// Naive keeps each call's own cap, and nothing else.
		{mode.Naive, mode.Mechanisms{Caps: true, Retries: mode.RetriesNaive, Fanout: mode.FanoutSequential}},
		// Fragile has not even the caps: no timeout at all.
		{mode.Fragile, mode.Mechanisms{Retries: mode.RetriesNaive, Fanout: mode.FanoutSequential}},
		{mode.Mode("unknown"), mode.Mechanisms{Caps: true, Retries: mode.RetriesNaive, Fanout: mode.FanoutSequential}},
	}
	for _, tt := range tests {
		t.Run(string(tt.m), func(t *testing.T) {
			if got := tt.m.Mechanisms(); got != tt.want {
				t.Errorf("%q.Mechanisms() = %+v, want %+v", tt.m, got, tt.want)
			}
		})
	}
}

func TestSettingsPolicy(t *testing.T) {
	const margin, floor = 3 * time.Millisecond, 20 * time.Millisecond
	tests := []struct {
		name string
		mech mode.Mechanisms
		want deadline.Policy
	}{
		{"budgeted", mode.Budgeted.Mechanisms(), deadline.Policy{Margin: margin, Floor: floor, Admission: true}},
		{"naive is blind and admits everything", mode.Naive.Mechanisms(), deadline.Policy{Margin: margin, Floor: floor, Blind: true}},
		{"fragile is blind and admits everything", mode.Fragile.Mechanisms(), deadline.Policy{Margin: margin, Floor: floor, Blind: true}},
		{"clip only", mode.Mechanisms{ClipToBudget: true}, deadline.Policy{Margin: margin, Floor: floor}},
		{"admission only", mode.Mechanisms{Admission: true}, deadline.Policy{Margin: margin, Floor: floor, Blind: true, Admission: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mode.Settings{Mechanisms: tt.mech, Margin: margin, Floor: floor}
			if got := s.Policy(); got != tt.want {
				t.Errorf("Policy() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The admin API shows settings as JSON; margin and floor are not part of it.
func TestSettingsJSON(t *testing.T) {
	s := mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(), Margin: time.Second, Floor: time.Second}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Mode       string         `json:"mode"`
		Mechanisms map[string]any `json:"mechanisms"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Mode != "budgeted" || got.Mechanisms["edge_deadline"] != true || got.Mechanisms["honour_cancel"] != true {
		t.Errorf("JSON = %s, want mode budgeted with its mechanisms by snake_case name", b)
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("JSON = %s, want only mode and mechanisms", b)
	}
}

func TestLive(t *testing.T) {
	naive := mode.Settings{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms(), Margin: time.Millisecond}
	budgeted := mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(), Floor: time.Millisecond}

	l := mode.NewLive(naive)
	if got := l.Load(); got != naive {
		t.Errorf("Load() = %+v, want %+v", got, naive)
	}
	if got := l.For(context.Background()).Policy(); got != naive.Policy() {
		t.Errorf("For(no request).Policy() = %+v, want %+v", got, naive.Policy())
	}
	l.Store(budgeted)
	if got := l.Load(); got != budgeted {
		t.Errorf("after Store, Load() = %+v, want %+v", got, budgeted)
	}
	if got := l.For(context.Background()).Policy(); got != budgeted.Policy() {
		t.Errorf("after Store, For(no request).Policy() = %+v, want %+v", got, budgeted.Policy())
	}

	// Load returns a copy: changing it does not change what is in force.
	got := l.Load()
	got.Mode = mode.Naive
	if l.Load().Mode != mode.Budgeted {
		t.Error("changing a loaded Settings changed the Live value")
	}
}

// Run with -race: a mode switch while requests read the settings never
// shows a reader a mix of the two presets.
func TestLiveConcurrent(t *testing.T) {
	presets := []mode.Settings{
		{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms(), Margin: 1, Floor: 1},
		{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(), Margin: 2, Floor: 2},
	}
	l := mode.NewLive(presets[0])
	var wg sync.WaitGroup
	var mu sync.Mutex
	var torn []mode.Settings
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				if i%4 == 0 {
					l.Store(presets[j%2])
					continue
				}
				s := l.Load()
				if s != presets[0] && s != presets[1] {
					mu.Lock()
					torn = append(torn, s)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(torn) > 0 {
		t.Errorf("%d loads saw a mix of presets, such as %+v", len(torn), torn[0])
	}
}

// Switch, unlike Store, tells the listeners (breakers, pools) so a new
// phase of the lab starts clean.
func TestLiveSwitch(t *testing.T) {
	naive := mode.Settings{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms()}
	budgeted := mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()}
	l := mode.NewLive(naive)
	var got []mode.Mode
	l.OnSwitch(func(s mode.Settings) { got = append(got, s.Mode) })
	l.OnSwitch(func(s mode.Settings) {
		if l.Load() != s {
			t.Errorf("a listener ran before the new settings were in force")
		}
	})

	l.Store(budgeted)
	if len(got) != 0 {
		t.Errorf("Store ran the listeners: %v", got)
	}
	l.Switch(naive)
	l.Switch(budgeted)
	if want := []mode.Mode{mode.Naive, mode.Budgeted}; !slices.Equal(got, want) {
		t.Errorf("listeners saw %v, want %v", got, want)
	}
	if l.Load() != budgeted {
		t.Errorf("after Switch, Load() = %+v, want %+v", l.Load(), budgeted)
	}
}

// --mechanisms criticality=off turns the one switch off on top of a
// preset, and says so back.
func TestOverrideCriticality(t *testing.T) {
	var o mode.Overrides
	if err := o.Set("criticality=off"); err != nil {
		t.Fatal(err)
	}
	m := mode.Budgeted.Mechanisms().Apply(o)
	want := mode.Budgeted.Mechanisms()
	want.Criticality = false
	if m != want {
		t.Errorf("budgeted with criticality=off = %+v, want %+v", m, want)
	}
	if got := o.String(); got != "criticality=false" {
		t.Errorf("String() = %q, want criticality=false", got)
	}
	if err := o.Set("criticality=maybe"); err == nil || !strings.Contains(err.Error(), "criticality") {
		t.Errorf("criticality=maybe: %v, want an error naming the switch", err)
	}
}

// The connect timeout is the budgeted preset's: naive keeps gRPC's
// default (zero here), and --mechanisms connect_timeout=off does too.
func TestConnectTimeout(t *testing.T) {
	const connect = 2 * time.Second
	var off mode.Overrides
	if err := off.Set("connect_timeout=off"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    mode.Mechanisms
		want time.Duration
	}{
		{"budgeted", mode.Budgeted.Mechanisms(), connect},
		{"naive", mode.Naive.Mechanisms(), 0},
		{"budgeted with connect_timeout=off", mode.Budgeted.Mechanisms().Apply(off), 0},
	} {
		s := mode.Settings{Mechanisms: tc.m, Connect: connect}
		if got := s.ConnectTimeout(); got != tc.want {
			t.Errorf("%s: ConnectTimeout() = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := off.String(); got != "connect_timeout=false" {
		t.Errorf("String() = %q, want connect_timeout=false", got)
	}
}

// The caps are naive's and budgeted's; fragile has none, and
// --mechanisms caps=on gives them back to it (stage 1 of armouring the
// fragile shop), caps=off takes them from the others.
func TestCaps(t *testing.T) {
	const cap = 300 * time.Millisecond
	set := func(text string) mode.Overrides {
		var o mode.Overrides
		if err := o.Set(text); err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name string
		m    mode.Mechanisms
		want time.Duration
	}{
		{"fragile", mode.Fragile.Mechanisms(), 0},
		{"naive", mode.Naive.Mechanisms(), cap},
		{"budgeted", mode.Budgeted.Mechanisms(), cap},
		{"fragile with caps=on", mode.Fragile.Mechanisms().Apply(set("caps=on")), cap},
		{"budgeted with caps=off", mode.Budgeted.Mechanisms().Apply(set("caps=off")), 0},
	} {
		s := mode.Settings{Mechanisms: tc.m}
		if got := s.Cap(cap); got != tc.want {
			t.Errorf("%s: Cap(%v) = %v, want %v", tc.name, cap, got, tc.want)
		}
	}
	if o := set("caps=on"); o.String() != "caps=true" {
		got := o.String()
		t.Errorf("String() = %q, want caps=true", got)
	}
}

// The stages of armouring the fragile shop are overrides of its preset;
// the last one is the budgeted preset itself.
func TestFragileStages(t *testing.T) {
	var stage1, stage2 mode.Overrides
	if err := stage1.Set("caps=on,connect_timeout=on"); err != nil {
		t.Fatal(err)
	}
	if err := stage2.Set("caps=on,connect_timeout=on,edge_deadline=on,clip_to_budget=on,admission=on,honour_cancel=on"); err != nil {
		t.Fatal(err)
	}
	one := mode.Fragile.Mechanisms().Apply(stage1)
	if !one.Caps || !one.ConnectTimeout || one.EdgeDeadline || one.ClipToBudget {
		t.Errorf("stage 1 = %+v, want caps and the connect timeout only", one)
	}
	two := mode.Fragile.Mechanisms().Apply(stage2)
	want := mode.Naive.Mechanisms()
	want.ConnectTimeout, want.EdgeDeadline, want.ClipToBudget, want.Admission, want.HonourCancel = true, true, true, true, true
	if two != want {
		t.Errorf("stage 2 = %+v, want %+v", two, want)
	}
	if two == mode.Budgeted.Mechanisms() {
		t.Error("stage 2 is already the budgeted preset")
	}
	if got := mode.Modes(); !slices.Equal(got, []mode.Mode{mode.Fragile, mode.Naive, mode.Budgeted}) {
		t.Errorf("Modes() = %v", got)
	}
}
