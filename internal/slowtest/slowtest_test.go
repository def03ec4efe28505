package slowtest_test

import (
	"testing"

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
