package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/loadtest"
)

// answersDir holds the course's answers: NAME.yaml, the reference, and
// NAME-naive.yaml, the answer that fails.
const answersDir = "../docs/course/answers"

func readAnswer(t *testing.T, file string) Answer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(answersDir, file))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAnswer(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return a
}

// Every challenge loads, runs in any mode, and has both answers, each
// valid for it.
func TestChallengesLoadWithBothAnswers(t *testing.T) {
	names := Challenges()
	if len(names) < 4 {
		t.Fatalf("challenges %v, want at least 4", names)
	}
	for _, name := range names {
		c, err := LoadChallenge(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Title == "" || c.Task == "" {
			t.Errorf("%s: no title or task", name)
		}
		if _, err := os.Stat(filepath.Join("..", c.Course)); err != nil {
			t.Errorf("%s: course page: %v", name, err)
		}
		for _, file := range []string{name + ".yaml", name + "-naive.yaml"} {
			a := readAnswer(t, file)
			if a.Challenge != name {
				t.Errorf("%s names challenge %q", file, a.Challenge)
			}
			if _, err := c.Run(a); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		}
	}
}

func TestParseAnswerSaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"mode: budgetd\n", `unknown mode "budgetd"`},
		{"# nothing yet\n", "the file is empty"},
		{"margin: 20ms\ncap:\n  shipping-cap: 1s\n", `line 2: unknown setting "cap"`},
		{"margin: 20ms\nfloor: soon\n", `line 2: time: invalid duration "soon"`},
	} {
		if _, err := ParseAnswer([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAnswer(%q) = %v, want an error with %q", tc.text, err, tc.want)
		}
	}
	a, err := ParseAnswer([]byte("margin: 20ms\n"))
	if err != nil || a.Mode != mode.Budgeted {
		t.Errorf("an answer naming no mode: %+v, %v; want budgeted", a, err)
	}
	c, err := LoadChallenge("lesson7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    Answer
		want string
	}{
		{Answer{Challenge: "drill76", Mode: mode.Budgeted}, `for challenge "drill76", not "lesson7"`},
		{Answer{Mode: mode.Budgeted, ShopSpec: loadtest.ShopSpec{Caps: map[string]loadtest.Duration{"shiping-cap": 1}}}, `unknown cap "shiping-cap"`},
		{Answer{Mode: mode.Budgeted, ShopSpec: loadtest.ShopSpec{Mechanisms: "breakers=maybe"}}, "breakers"},
	} {
		if _, err := c.Run(tc.a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v, want an error with %q", tc.a, err, tc.want)
		}
	}
}

// The answer's settings go over the challenge's shop: each one it gives
// replaces the challenge's, its caps join the challenge's, and its
// mechanisms are switched after the challenge's, so they win.
func TestAnswerGoesOverTheChallengesShop(t *testing.T) {
	c := Challenge{Name: "x", Scenario: loadtest.Scenario{
		Deadline: loadtest.Duration(1e9), Classes: map[string]loadtest.ClassSpec{"checkout": {Rate: 1}},
		Phases: []loadtest.Phase{{Name: "p", Duration: loadtest.Duration(1e9)}},
		Shop: loadtest.ShopSpec{Workers: 200, Bulkhead: 10, Mechanisms: "retries=off",
			Caps: map[string]loadtest.Duration{"catalog-cap": 5}}},
		Objectives: []Objective{{Check: loadtest.Check{Name: "o", Class: "checkout", Figure: "success", AtLeast: new(0.9)}, Hint: "h"}}}
	sc, err := c.Run(Answer{Mode: mode.Naive, ShopSpec: loadtest.ShopSpec{Bulkhead: 30, Mechanisms: "retries=budgeted",
		Caps: map[string]loadtest.Duration{"payments-cap": 7}}})
	if err != nil {
		t.Fatal(err)
	}
	sh := sc.Shop
	if sh.Workers != 200 || sh.Bulkhead != 30 || sh.Mechanisms != "retries=off,retries=budgeted" ||
		sh.Caps["catalog-cap"] != 5 || sh.Caps["payments-cap"] != 7 {
		t.Errorf("shop = %+v", sh)
	}
	if len(c.Scenario.Shop.Caps) != 1 {
		t.Errorf("the answer changed the challenge's own caps: %v", c.Scenario.Shop.Caps)
	}
	if !slices.Equal(sc.Modes, []mode.Mode{mode.Naive}) || len(sc.Checks) != 1 || sc.Checks[0].Mode != "naive" {
		t.Errorf("modes %v, checks %+v: want the answer's mode in both", sc.Modes, sc.Checks)
	}
	named := c
	named.Objectives = []Objective{{Check: loadtest.Check{Name: "o", Mode: "budgeted", Class: "checkout", Figure: "success", AtLeast: new(0.9)}, Hint: "h"}}
	if _, err := named.Run(Answer{Mode: mode.Budgeted}); err == nil || !strings.Contains(err.Error(), "names a mode") {
		t.Errorf("an objective naming a mode: %v", err)
	}
}

// Mark grades objective by objective: a hint for each one missed and
// none for one met; an INVALID run is not graded, whatever it measured.
func TestMarkGradesEachObjective(t *testing.T) {
	c := Challenge{Name: "x", Objectives: []Objective{
		{Check: loadtest.Check{Name: "fast"}, Hint: "be quicker"},
		{Check: loadtest.Check{Name: "up"}, Hint: "stay up"},
	}}
	res := loadtest.Results{Modes: []loadtest.ModeResult{{Mode: "budgeted", Valid: true}},
		Checks: []loadtest.CheckResult{{Check: loadtest.Check{Name: "fast"}, Pass: false, Value: 1300, Bound: 1210},
			{Check: loadtest.Check{Name: "up"}, Pass: true, Value: 1, Bound: 0.99}}}
	g, err := c.Mark(res)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Graded || g.Met != 1 || g.Passed() || g.Score() != "1 of 2 objectives met" {
		t.Errorf("grade = %+v (%s)", g, g.Score())
	}
	if g.Objectives[0].Hint != "be quicker" || g.Objectives[1].Hint != "" {
		t.Errorf("hints = %q, %q; want the missed one's only", g.Objectives[0].Hint, g.Objectives[1].Hint)
	}
	res.Checks[0].Pass = true
	if g, _ := c.Mark(res); !g.Passed() {
		t.Errorf("every objective met: %+v", g)
	}
	res.Modes[0].Valid, res.Modes[0].Invalid = false, "schedule lag p99 40 ms"
	g, _ = c.Mark(res)
	if g.Graded || g.Passed() || !strings.HasPrefix(g.Score(), "not graded") {
		t.Errorf("an INVALID run: %+v (%s)", g, g.Score())
	}
	res.Checks = res.Checks[:1]
	if _, err := c.Mark(res); err == nil {
		t.Error("a run with fewer checks than objectives was graded")
	}
}
