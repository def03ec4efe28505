package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
)

const challengeUsage = `Usage: mercado lab challenge NAME --answer FILE [flags]

Grades an answer: runs the challenge's fault profile on an in-process shop
set up as the answer FILE says (the mode it starts from, and the shop
settings a scenario's shop: block takes — caps, margin, floor, bulkhead,
breaker settings, mechanisms), then scores it against the challenge's
objectives, printing what each measured and a hint for each one missed.
An INVALID run is not graded. docs/course/09-challenges.md runs a class
with them.

Challenges:
%s
Exit status: 0 every objective met; 1 an error; 2 a usage error (a bad
answer file too); 3 an objective missed; 4 not graded (the run was
INVALID: close other programs and run it again).

Flags:
`

func runChallenge(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return challengeLab(ctx, args, getenv, stdout, stderr, nil)
}

// challengeLab is runChallenge with the run held to validity (nil: the
// default rule), so that a test can make a run INVALID on purpose.
func challengeLab(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, validity *loadtest.Validity) error {
	fs := flag.NewFlagSet("mercado lab challenge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, challengeUsage, challengeList()); fs.PrintDefaults() }
	answerFile := fs.String("answer", "", "the answer: a YAML file of the mode and the shop's settings (docs/course/answers holds examples)")
	quick := fs.Bool("quick", false, "shorten each phase to its quick: length (about half a minute): to try an answer, not to grade a class")
	asJSON := fs.Bool("json", false, "print the grade as JSON, for a trainer to collect")
	out := fs.String("out", "lab-report", `folder for the run's results.json and report.html ("" for none)`)
	var store storeFlags
	store.bind(fs)
	name, help, err := parseCommandArg(fs, args, getenv)
	if help || err != nil {
		return err
	}
	if name == "" {
		return usagef("lab challenge: name a challenge (%s)", strings.Join(lab.Challenges(), ", "))
	}
	if err := store.check(); err != nil {
		return usageError{fmt.Errorf("lab challenge: %w", err)}
	}
	c, err := lab.LoadChallenge(name)
	if err != nil {
		return usageError{fmt.Errorf("lab challenge: %w", err)}
	}
	if *answerFile == "" {
		return usagef("lab challenge %s: --answer FILE is required: your allocation, as in docs/course/answers/%s.yaml", name, name)
	}
	b, err := os.ReadFile(*answerFile)
	if err != nil {
		return usageError{fmt.Errorf("lab challenge %s: %w", name, err)}
	}
	a, err := lab.ParseAnswer(b)
	if err != nil {
		return usageError{fmt.Errorf("lab challenge %s: %s: %w", name, *answerFile, err)}
	}
	sc, err := c.Run(a)
	if err != nil {
		return usageError{fmt.Errorf("lab challenge %s: %s: %w", name, *answerFile, err)}
	}
	if *quick {
		sc = sc.Quick()
	}
	fmt.Fprintf(stderr, "challenge %s: %s, answer %s in %s mode\n", c.Name, c.Title, *answerFile, a.Mode)
	bar := newProgress(stderr)
	res, err := lab.ScenarioApart(ctx, sc, slog.New(slog.DiscardHandler), lab.ScenarioRun{Progress: bar.update,
		Generator: generatorApart(stderr, bar.update, validity), DatabaseURL: store.url, DBMaxConns: store.conns})
	bar.finish()
	if err != nil {
		return fmt.Errorf("lab challenge %s: %w", name, err)
	}
	g, err := c.Mark(res)
	if err != nil {
		return fmt.Errorf("lab challenge %s: %w", name, err)
	}
	g.Answer, g.Quick = *answerFile, *quick
	if *out != "" {
		if err := writeRunFiles(*out, res); err != nil {
			return fmt.Errorf("lab challenge %s: %w", name, err)
		}
		fmt.Fprintf(stderr, "wrote the run's figures to %s and %s\n", filepath.Join(*out, "results.json"), filepath.Join(*out, "report.html"))
	}
	if *asJSON {
		js, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			return err
		}
		if _, err := stdout.Write(append(js, '\n')); err != nil {
			return err
		}
	} else {
		writeGrade(stdout, c, g)
	}
	return gradeVerdict("lab challenge "+name, g)
}

// challengeList is the challenges as the usage lists them.
func challengeList() string {
	var b strings.Builder
	for _, name := range lab.Challenges() {
		c, err := lab.LoadChallenge(name)
		if err != nil {
			fmt.Fprintf(&b, "  %-10s %v\n", name, err)
			continue
		}
		fmt.Fprintf(&b, "  %-10s %s (%s)\n", c.Name, c.Title, c.Course)
	}
	return b.String()
}

// writeGrade prints the grade: the task, each objective met or missed
// with what it measured, a hint under each one missed, and the score.
func writeGrade(w io.Writer, c lab.Challenge, g lab.Grade) {
	fmt.Fprintf(w, "Challenge %s: %s\n", c.Name, c.Title)
	for _, line := range wrap(c.Task, 72) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "Answer %s (%s mode)", g.Answer, g.Mode)
	if g.Quick {
		fmt.Fprint(w, ", quick run")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	for _, o := range g.Objectives {
		verdict := "MET   "
		if !o.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", verdict, o.Name, o.Measured)
		if o.Hint != "" {
			for i, line := range wrap(o.Hint, 66) {
				label := "hint:"
				if i > 0 {
					label = ""
				}
				fmt.Fprintf(w, "         %-5s %s\n", label, line)
			}
		}
	}
	fmt.Fprintf(w, "\nScore: %s", g.Score())
	switch {
	case !g.Graded:
		fmt.Fprintf(w, ". %s.\n", loadtest.RunAgain)
	case g.Passed():
		fmt.Fprintln(w, ": PASS")
	default:
		fmt.Fprintln(w, ": FAIL")
	}
}

// wrap breaks text into lines of at most width runes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// gradeVerdict is a grade as the command's error: nil when every
// objective was met, exitFailed when one was missed, exitInvalid when the
// run was not graded.
func gradeVerdict(command string, g lab.Grade) error {
	switch {
	case !g.Graded:
		return verdictError{loadtest.VerdictInvalid, fmt.Sprintf("%s: %s. %s", command, g.Score(), loadtest.RunAgain)}
	case !g.Passed():
		return verdictError{loadtest.VerdictFail, fmt.Sprintf("%s: FAIL, %s", command, g.Score())}
	}
	return nil
}
