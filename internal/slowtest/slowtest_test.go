package slowtest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/slowtest"
)

func TestRequireSkipsUnlessAsked(t *testing.T) {
	for _, tc := range []struct {
		env     string
		skipped bool
	}{{"", true}, {"1", false}} {
		t.Setenv(slowtest.Env, tc.env)
		var skipped bool
		t.Run("env="+tc.env, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			slowtest.Require(t, "a test")
		})
		if skipped != tc.skipped {
			t.Errorf("%s=%q: skipped %v, want %v", slowtest.Env, tc.env, skipped, tc.skipped)
		}
	}
}

// TestExclusiveTakesTurns: a second test process that asks for the turn
// waits until the first one's test has ended.
func TestExclusiveTakesTurns(t *testing.T) {
	if os.Getenv("SLOWTEST_HOLDER") != "" {
		slowtest.Exclusive(t)
		fmt.Println("holding")
		time.Sleep(300 * time.Millisecond)
		return
	}
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command(os.Args[0], "-test.run=^TestExclusiveTakesTurns$")
	cmd.Env = append(os.Environ(), "SLOWTEST_HOLDER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	t.Run("second", func(t *testing.T) { slowtest.Exclusive(t) })
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("the second test got its turn after %v, while the first still held it", waited)
	}
}
