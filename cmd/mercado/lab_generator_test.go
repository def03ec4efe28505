package main

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/loadtest"
)

// TestMain lets this test binary be the load generator's process: the
// labs start their own executable again as `mercado lab load-generator`,
// and under test that executable is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "lab" && os.Args[2] == generatorCommand {
		main()
	}
	os.Exit(m.Run())
}

// The generator's process gets its scenario as JSON: every built-in
// scenario must arrive as it was loaded.
func TestScenariosReachTheGeneratorWhole(t *testing.T) {
	for _, name := range loadtest.Builtin() {
		sc, err := loadtest.LoadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(generatorRequest{Scenario: sc})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got generatorRequest
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got.Scenario, sc) {
			t.Errorf("%s: the generator would run\n%+v\nnot\n%+v", name, got.Scenario, sc)
		}
	}
}

// processCPU reads a process's CPU time, which grows as it works.
func TestProcessCPUReadsTheShopsCPU(t *testing.T) {
	cpu := processCPU(os.Getpid())
	if cpu == nil {
		t.Skip("no /proc here: the generator reports no CPU figure")
	}
	before := cpu()
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
	}
	if after := cpu(); after <= before {
		t.Errorf("CPU time %v after 200 ms of work, %v before: it did not grow", after, before)
	}
	if processCPU(-1) != nil {
		t.Error("a process that does not exist has a CPU reader")
	}
}
