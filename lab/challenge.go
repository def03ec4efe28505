package lab

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/loadtest"
)

// A challenge is a graded exercise: a fault profile the learner's
// allocation (an Answer) must hold, and the objectives it is graded on.
// The files are the course's: challenges/NAME.yaml.
//
//go:embed challenges/*.yaml
var challengeFiles embed.FS

// Challenge is one graded exercise.
type Challenge struct {
	Name  string `yaml:"name" json:"name"`
	Title string `yaml:"title" json:"title"`
	// Course is the course page that teaches what the challenge grades.
	Course string `yaml:"course" json:"course"`
	// Task is what the learner is asked to hand in, in words.
	Task string `yaml:"task" json:"task"`
	// Scenario is the fault profile: its load, phases and faults, and the
	// shop an answer starts from. It names no modes (the answer does) and
	// has no checks (the objectives are).
	Scenario   loadtest.Scenario `yaml:"scenario" json:"-"`
	Objectives []Objective       `yaml:"objectives" json:"objectives"`
}

// Objective is a check with no mode — it holds in the answer's — and a
// hint, printed when an answer misses it.
type Objective struct {
	loadtest.Check `yaml:",inline"`
	Hint           string `yaml:"hint" json:"hint"`
}

// Answer is a learner's allocation: the mode it starts from (budgeted
// unless it says) and the shop settings a scenario's shop: block takes —
// caps, margin, floor, bulkhead, breaker settings, and mechanisms
// switched on top of the mode (retries, classes, …).
type Answer struct {
	// Challenge, when given, must name the challenge the answer is for.
	Challenge         string    `yaml:"challenge"`
	Mode              mode.Mode `yaml:"mode"`
	loadtest.ShopSpec `yaml:",inline"`
}

// Challenges lists the challenges by name, in the course's order (by
// the page of each).
func Challenges() []string {
	type entry struct{ page, name string }
	var all []entry
	files, _ := fs.ReadDir(challengeFiles, "challenges")
	for _, f := range files {
		var c struct {
			Course string `yaml:"course"`
		}
		b, _ := fs.ReadFile(challengeFiles, "challenges/"+f.Name())
		_ = yaml.Unmarshal(b, &c) // LoadChallenge reports a broken file
		all = append(all, entry{c.Course, strings.TrimSuffix(f.Name(), path.Ext(f.Name()))})
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.page+"\x00"+a.name, b.page+"\x00"+b.name) })
	names := make([]string, len(all))
	for i, e := range all {
		names[i] = e.name
	}
	return names
}

// LoadChallenge returns the challenge called name.
func LoadChallenge(name string) (Challenge, error) {
	b, err := challengeFiles.ReadFile("challenges/" + name + ".yaml")
	if err != nil {
		return Challenge{}, fmt.Errorf("no challenge %q (have %s)", name, strings.Join(Challenges(), ", "))
	}
	var c Challenge
	if err := strictYAML(b, &c); err != nil {
		return Challenge{}, fmt.Errorf("challenge %s: %w", name, err)
	}
	if c.Name != name {
		return Challenge{}, fmt.Errorf("challenge %s: its file names it %q", name, c.Name)
	}
	// Validated as it runs, in one mode: the objectives must hold there.
	if _, err := c.Run(Answer{Mode: mode.Budgeted}); err != nil {
		return Challenge{}, fmt.Errorf("challenge %s: %w", name, err)
	}
	return c, nil
}

// ParseAnswer reads an answer strictly: an unknown setting is an error,
// so a misspelt cap is not silently left at its default.
func ParseAnswer(b []byte) (Answer, error) {
	var a Answer
	if err := strictYAML(b, &a); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// "line 3: field cap not found in type lab.Answer" names a
			// Go type the learner never wrote.
			msgs := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				msgs[i] = unknownField.ReplaceAllString(e, `unknown setting "$1"`)
			}
			return Answer{}, errors.New(strings.Join(msgs, "; "))
		}
		return Answer{}, err
	}
	if a.Mode == "" {
		a.Mode = mode.Budgeted
	}
	if _, err := mode.Parse(string(a.Mode)); err != nil {
		return Answer{}, fmt.Errorf("mode: %w", err)
	}
	return a, nil
}

// unknownField matches yaml's error for a field no setting has.
var unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// strictYAML decodes b into v, every field known.
func strictYAML(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); errors.Is(err, io.EOF) {
		return errors.New("the file is empty")
	} else if err != nil {
		return err
	}
	return nil
}

// Run is the scenario that grades a: the fault profile in a's mode, on
// the challenge's shop with a's settings over it, and the objectives as
// its checks.
func (c Challenge) Run(a Answer) (loadtest.Scenario, error) {
	if a.Challenge != "" && a.Challenge != c.Name {
		return loadtest.Scenario{}, fmt.Errorf("the answer is for challenge %q, not %q", a.Challenge, c.Name)
	}
	sc := c.Scenario
	sc.Name = "challenge " + c.Name
	sc.Modes = []mode.Mode{a.Mode}
	sc.Shop = overShop(sc.Shop, a.ShopSpec)
	sc.Checks = nil
	var errs []error
	for _, o := range c.Objectives {
		if o.Mode != "" || (o.Of != nil && o.Of.Mode != "") {
			errs = append(errs, fmt.Errorf("objective %q: names a mode; an objective holds in the answer's", o.Name))
		}
		if o.Hint == "" {
			errs = append(errs, fmt.Errorf("objective %q: has no hint", o.Name))
		}
		ch := o.Check
		ch.Mode = string(a.Mode)
		sc.Checks = append(sc.Checks, ch)
	}
	if len(c.Objectives) == 0 {
		errs = append(errs, errors.New("no objectives"))
	}
	if err := sc.Validate(); err != nil {
		errs = append(errs, err)
	}
	return sc, errors.Join(errs...)
}

// overShop is base with every setting a gives over it; a's mechanisms
// are switched after base's, so they win where both name one.
func overShop(base, a loadtest.ShopSpec) loadtest.ShopSpec {
	setIf(&base.Workers, a.Workers)
	setIf(&base.BreakerOpen, a.BreakerOpen)
	setIf(&base.Bulkhead, a.Bulkhead)
	setIf(&base.BreakerMinCalls, a.BreakerMinCalls)
	setIf(&base.BreakerRatio, a.BreakerRatio)
	setIf(&base.BreakerWindow, a.BreakerWindow)
	setIf(&base.Margin, a.Margin)
	setIf(&base.Floor, a.Floor)
	setIf(&base.ConnectTimeout, a.ConnectTimeout)
	if len(a.Caps) > 0 {
		caps := map[string]loadtest.Duration{}
		maps.Copy(caps, base.Caps)
		maps.Copy(caps, a.Caps)
		base.Caps = caps
	}
	base.Mechanisms = strings.Trim(base.Mechanisms+","+a.Mechanisms, ",")
	return base
}

// Grade is an answer's grade: each objective with what the run measured.
type Grade struct {
	Challenge string    `json:"challenge"`
	Title     string    `json:"title"`
	Answer    string    `json:"answer"`
	Mode      mode.Mode `json:"mode"`
	Quick     bool      `json:"quick"`
	// Graded is false when the run was INVALID: the load generator fell
	// behind its schedule, so nothing it measured grades anything.
	Graded  bool   `json:"graded"`
	Invalid string `json:"invalid,omitempty"`
	// Met of Objectives held; the answer passes when all did.
	Met        int           `json:"met"`
	Objectives []GradedCheck `json:"objectives"`
}

// GradedCheck is one objective as the run measured it. Hint is given
// for a missed objective only.
type GradedCheck struct {
	Name     string  `json:"name"`
	Met      bool    `json:"met"`
	Value    float64 `json:"value"`
	Bound    float64 `json:"bound"`
	Measured string  `json:"measured"`
	Hint     string  `json:"hint,omitempty"`
}

// Passed reports an answer graded with every objective met.
func (g Grade) Passed() bool { return g.Graded && g.Met == len(g.Objectives) }

// Score is the grade in words: "3 of 4 objectives met", or why the
// answer was not graded.
func (g Grade) Score() string {
	if !g.Graded {
		return "not graded: the run was INVALID (" + g.Invalid + ")"
	}
	return fmt.Sprintf("%d of %d objectives met", g.Met, len(g.Objectives))
}

// Mark grades res, the run of c.Run(answer), objective by objective.
func (c Challenge) Mark(res loadtest.Results) (Grade, error) {
	g := Grade{Challenge: c.Name, Title: c.Title, Graded: true}
	if len(res.Modes) != 1 || len(res.Checks) != len(c.Objectives) {
		return g, fmt.Errorf("challenge %s: the run has %d modes and %d checks, want 1 and %d", c.Name, len(res.Modes), len(res.Checks), len(c.Objectives))
	}
	if m := res.Modes[0]; !m.Valid {
		g.Graded, g.Invalid = false, m.Invalid
	}
	g.Mode = mode.Mode(res.Modes[0].Mode)
	for i, o := range c.Objectives {
		r := res.Checks[i]
		gc := GradedCheck{Name: o.Name, Met: r.Pass, Value: r.Value, Bound: r.Bound, Measured: r.Describe()}
		if !r.Pass {
			gc.Hint = strings.TrimSpace(o.Hint)
		}
		if r.Pass {
			g.Met++
		}
		g.Objectives = append(g.Objectives, gc)
	}
	return g, nil
}
