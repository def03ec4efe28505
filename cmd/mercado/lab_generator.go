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
// mode. In the lab's process the generator's goroutines would queue behind
// the shop's, which the lab makes busy on purpose (naive mode's retries and
// queues), and Go's scheduler has no priorities: the requests would leave
// late and the run would measure the generator. The kernel, between two
// processes, wakes the one that mostly sleeps — the generator — at once.

// generatorCommand is the lab name of the generator's process.
const generatorCommand = "load-generator"

// generatorRequest is what the lab hands its generator on standard input.
type generatorRequest struct {
	Scenario loadtest.Scenario `json:"scenario"`
	Shop     lab.Target        `json:"shop"`
}

// generatorMessage is one line the generator writes on standard output:
// how far it got, then its results.
type generatorMessage struct {
	Progress *generatorProgress `json:"progress,omitempty"`
	Results  *loadtest.Results  `json:"results,omitempty"`
}

type generatorProgress struct {
	Mode  string        `json:"mode"`
	Done  time.Duration `json:"done"`
	Total time.Duration `json:"total"`
}

// generatorApart returns the lab's Generator that starts this program as
// the generator's process, or nil (the generator in this process) when
// the program cannot find itself.
func generatorApart(stderr io.Writer, progress func(string, time.Duration, time.Duration)) lab.Generator {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return func(ctx context.Context, sc loadtest.Scenario, shop lab.Target) (loadtest.Results, error) {
		req, err := json.Marshal(generatorRequest{Scenario: sc, Shop: shop})
		if err != nil {
			return loadtest.Results{}, err
		}
		cmd := exec.CommandContext(ctx, self, "lab", generatorCommand)
		cmd.Stdin, cmd.Stderr = bytes.NewReader(req), stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return loadtest.Results{}, err
		}
		if err := cmd.Start(); err != nil {
			return loadtest.Results{}, fmt.Errorf("load generator: %w", err)
		}
		var res *loadtest.Results
		dec := json.NewDecoder(out)
		for {
			var m generatorMessage
			if err := dec.Decode(&m); err != nil {
				break
			}
			if p := m.Progress; p != nil && progress != nil {
				progress(p.Mode, p.Done, p.Total)
			}
			if m.Results != nil {
				res = m.Results
			}
		}
		if err := cmd.Wait(); err != nil {
			return loadtest.Results{}, fmt.Errorf("load generator: %w", err)
		}
		if res == nil {
			return loadtest.Results{}, errors.New("load generator: it ended without results")
		}
		return *res, nil
	}
}

// runLoadGenerator is the generator's process: it reads a
// generatorRequest on stdin, runs the scenario against the shop named
// there, and writes its progress and results on stdout.
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
	res, err := loadtest.RunScenario(ctx, req.Scenario, req.Shop.Drive(), loadtest.RunOptions{
		Progress: func(m string, done, total time.Duration) {
			_ = send(generatorMessage{Progress: &generatorProgress{Mode: m, Done: done, Total: total}})
		},
		CPU: processCPU(req.Shop.PID),
	})
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
