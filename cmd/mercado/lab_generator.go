package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
)

// A scenario lab's load generator runs in a process of its own: this
// program, started again as `mercado lab load-generator`, one process per
// mode (per stage, for the capstone). In the lab's process the
// generator's goroutines would queue behind the shop's, which the lab
// makes busy on purpose (naive mode's retries and queues), and Go's
// scheduler has no priorities: the requests would leave late and the run
// would measure the generator. The kernel, between two
// processes, wakes the one that mostly sleeps — the generator — at once.

// generatorCommand is the lab name of the generator's process.
const generatorCommand = "load-generator"

// generatorRequest is what the lab hands its generator on standard input.
type generatorRequest struct {
	Scenario loadtest.Scenario `json:"scenario"`
	Shop     lab.Target        `json:"shop"`
	// Stage, when set, makes the run a capstone stage's
	// (lab.RunStageLoad): the generator reads the warm-up's hops and asks
	// for the shop's stop when these say.
	Stage *lab.StageHooks `json:"stage,omitempty"`
	// Validity, when set, is the rule the run is held to instead of the
	// default one (loadtest.RunOptions.Validity).
	Validity *loadtest.Validity `json:"validity,omitempty"`
}

// generatorMessage is one line the generator writes on standard output:
// how far it got, then its results — for a capstone stage, with the
// warm-up's hops, and before them, when the stage's shop must stop, a
// message that says so.
type generatorMessage struct {
	Progress *generatorProgress `json:"progress,omitempty"`
	// StopShop asks the lab to stop the shop now.
	StopShop bool              `json:"stop_shop,omitempty"`
	Results  *loadtest.Results `json:"results,omitempty"`
	Stage    *lab.StageLoad    `json:"stage,omitempty"`
}

type generatorProgress struct {
	Mode  string        `json:"mode"`
	Done  time.Duration `json:"done"`
	Total time.Duration `json:"total"`
}

// generatorApart returns the lab's Generator that starts this program as
// the generator's process, or nil (the generator in this process) when
// the program cannot find itself. validity, when set, is the rule the
// runs are held to instead of the default one.
func generatorApart(stderr io.Writer, progress func(string, time.Duration, time.Duration), validity *loadtest.Validity) lab.Generator {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return func(ctx context.Context, sc loadtest.Scenario, shop lab.Target) (loadtest.Results, error) {
		m, err := runGeneratorProcess(ctx, self, generatorRequest{Scenario: sc, Shop: shop, Validity: validity}, stderr, progress, nil)
		if err != nil {
			return loadtest.Results{}, err
		}
		if m.Results == nil {
			return loadtest.Results{}, errors.New("load generator: it ended without results")
		}
		return *m.Results, nil
	}
}

// stageGeneratorApart returns the capstone's StageGenerator that starts
// this program as the generator's process, or nil (the generator in this
// process) when the program cannot find itself.
func stageGeneratorApart(stderr io.Writer) lab.StageGenerator {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return func(ctx context.Context, sc loadtest.Scenario, shop lab.Target, hooks lab.StageHooks, stopShop func(), progress func(string, time.Duration, time.Duration)) (lab.StageLoad, error) {
		m, err := runGeneratorProcess(ctx, self, generatorRequest{Scenario: sc, Shop: shop, Stage: &hooks}, stderr, progress, stopShop)
		if err != nil {
			return lab.StageLoad{}, err
		}
		if m.Stage == nil {
			return lab.StageLoad{}, errors.New("load generator: it ended without the stage's results")
		}
		return *m.Stage, nil
	}
}

// runGeneratorProcess starts self as the generator's process with req,
// tells progress how far it got and calls stopShop when it asks for the
// shop's stop, and returns its last message with results.
func runGeneratorProcess(ctx context.Context, self string, req generatorRequest, stderr io.Writer, progress func(string, time.Duration, time.Duration), stopShop func()) (generatorMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return generatorMessage{}, err
	}
	cmd := exec.CommandContext(ctx, self, "lab", generatorCommand)
	cmd.Stdin, cmd.Stderr = bytes.NewReader(body), stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return generatorMessage{}, err
	}
	if err := cmd.Start(); err != nil {
		return generatorMessage{}, fmt.Errorf("load generator: %w", err)
	}
	var last generatorMessage
	dec := json.NewDecoder(out)
	for {
		var m generatorMessage
		if err := dec.Decode(&m); err != nil {
			break
		}
		if p := m.Progress; p != nil && progress != nil {
			progress(p.Mode, p.Done, p.Total)
		}
		if m.StopShop && stopShop != nil {
			stopShop()
		}
		if m.Results != nil || m.Stage != nil {
			last = m
		}
	}
	if err := cmd.Wait(); err != nil {
		return generatorMessage{}, fmt.Errorf("load generator: %w", err)
	}
	return last, nil
}

// runLoadGenerator is the generator's process: it reads a
// generatorRequest on stdin, runs the scenario against the shop named
// there — as a capstone stage when the request says so — and writes its
// progress and results on stdout.
func runLoadGenerator(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	var req generatorRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return usageError{fmt.Errorf("lab %s: reading the request on stdin: %w", generatorCommand, err)}
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	send := func(m generatorMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(m)
	}
	opts := loadtest.RunOptions{
		Progress: func(m string, done, total time.Duration) {
			_ = send(generatorMessage{Progress: &generatorProgress{Mode: m, Done: done, Total: total}})
		},
		CPU:      processCPU(req.Shop.PID),
		Validity: req.Validity,
	}
	if req.Stage != nil {
		stopShop := func() { _ = send(generatorMessage{StopShop: true}) }
		out, err := lab.RunStageLoad(ctx, req.Scenario, req.Shop, *req.Stage, stopShop, opts)
		if err != nil {
			return fmt.Errorf("lab %s: %w", generatorCommand, err)
		}
		return send(generatorMessage{Stage: &out})
	}
	res, err := loadtest.RunScenario(ctx, req.Scenario, req.Shop.Drive(), opts)
	if err != nil {
		return fmt.Errorf("lab %s: %w", generatorCommand, err)
	}
	return send(generatorMessage{Results: &res})
}

// clockTicks is how many ticks a second /proc counts CPU time in (Linux's
// USER_HZ, 100 on every architecture Go supports).
const clockTicks = 100

// processCPU reads process pid's CPU time, user and system, from
// /proc/pid/stat: the shop's cost, without the generator's. It is nil
// where there is no /proc, and the run reports no CPU figure then.
func processCPU(pid int) func() time.Duration {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	read := func() (time.Duration, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		// The command's name, in parentheses, may hold spaces: the fields
		// are counted after its closing parenthesis. utime and stime are
		// the 14th and 15th fields, the 12th and 13th after it.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return 0, false
		}
		user, err1 := strconv.ParseInt(f[11], 10, 64)
		sys, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return time.Duration(user+sys) * time.Second / clockTicks, true
	}
	if _, ok := read(); !ok || pid <= 0 {
		return nil
	}
	return func() time.Duration {
		d, _ := read()
		return d
	}
}
