package report

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/loadtest"
)

// chromiumPage opens the report of r in headless Chromium (Debian's
// chromium package; .ci/run installs it) at width × height, and returns
// the browser's context and what the page logged as errors or warnings.
// Off CI, with no chromium, the test is skipped.
func chromiumPage(t *testing.T, r loadtest.Results, width, height int64) (context.Context, func() []string) {
	t.Helper()
	return chromiumPageOf(t, func(w io.Writer) error { return WriteHTML(w, r) }, width, height)
}

// chromiumPageOf is chromiumPage for the page write writes.
func chromiumPageOf(t *testing.T, write func(io.Writer) error, width, height int64) (context.Context, func() []string) {
	t.Helper()
	slowtest.Require(t, "Chromium")
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium) — the report's browser tests need it")
	}
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(int(width), int(height)))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelTimeout)

	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		}
	}
	if err := chromedp.Listen(ctx, listen); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitReady("body")); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// TestReportRendersInChromium checks that the page loads with no console
// errors and that its charts are there.
func TestReportRendersInChromium(t *testing.T) {
	ctx, problems := chromiumPage(t, sampleResults(), 1400, 900)
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged problems: %v", p)
	}
	if charts < 5 {
		t.Errorf("%d charts rendered, want the first screen's, latency, goodput, pool and breaker charts", charts)
	}
	if title == "" {
		t.Error("the page has no title")
	}
}

// firstScreen is where the first screen's parts are drawn: each one's
// bottom edge, in CSS pixels from the top of the page, and its text.
type firstScreen struct {
	Verdict      box   `json:"verdict"`
	Headlines    []box `json:"headlines"`
	Chart        box   `json:"chart"`
	FaultBand    box   `json:"fault_band"`
	ScreenHeight int   `json:"screen_height"`
}

type box struct {
	Bottom float64 `json:"bottom"`
	Text   string  `json:"text"`
	Found  bool    `json:"found"`
}

const firstScreenJS = `(() => {
  const box = el => el ? {bottom: el.getBoundingClientRect().bottom + window.scrollY, text: el.textContent, found: true} : {found: false};
  return {
    verdict: box(document.querySelector("#verdict")),
    headlines: [...document.querySelectorAll("#headlines .headline")].map(box),
    chart: box(document.querySelector("#story-chart svg")),
    fault_band: box(document.querySelector("#story-chart svg rect.fault")),
    screen_height: window.innerHeight,
  };
})()`

// TestReportFirstScreen: at 1400×900, a projector's screen, the verdict,
// both modes' headline figures and the goodput chart with its fault band
// are all above the fold. It writes the screenshot of that screen to
// $MERCADO_SCREENSHOTS/report.png when that is set, of the results in
// $MERCADO_REPORT_RESULTS when that names a run's results.json
// (scripts/report-screenshot.sh does both, from a real run).
func TestReportFirstScreen(t *testing.T) {
	r := phasedResults()
	if path := os.Getenv("MERCADO_REPORT_RESULTS"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r = loadtest.Results{}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	ctx, problems := chromiumPage(t, r, 1400, 900)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[firstScreen](firstScreenJS))
	if err != nil {
		t.Fatal(err)
	}
	if s.ScreenHeight != 900 {
		t.Fatalf("the window is %d px high, want 900", s.ScreenHeight)
	}
	fold := float64(s.ScreenHeight)
	check := func(name string, b box) {
		t.Helper()
		switch {
		case !b.Found:
			t.Errorf("the first screen has no %s", name)
		case b.Bottom > fold:
			t.Errorf("the %s ends %.0f px down, below the first %.0f px", name, b.Bottom, fold)
		}
	}
	check("verdict", s.Verdict)
	check("goodput chart", s.Chart)
	check("fault band", s.FaultBand)
	if len(s.Headlines) < 2 {
		t.Errorf("%d headline figures, want two or three", len(s.Headlines))
	}
	for i, h := range s.Headlines {
		check("headline figure "+h.Text, h)
		for _, m := range r.Modes {
			if !strings.Contains(h.Text, m.Mode) {
				t.Errorf("headline figure %d (%q) lacks %s's value", i, h.Text, m.Mode)
			}
		}
	}
	if !strings.Contains(s.Verdict.Text, "naive") || !strings.Contains(s.Verdict.Text, "budgeted") {
		t.Errorf("the verdict %q does not compare the modes", s.Verdict.Text)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged problems: %v", p)
	}

	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("MERCADO_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "report.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportTablesFitTheWidth: at 1280 px, a laptop's or a projector's
// width, no table runs past the page's margin — the capstone's table of
// eleven columns, with its widest figures, included — so no column is cut
// off at the screen's edge.
func TestReportTablesFitTheWidth(t *testing.T) {
	lead := Lead{
		Title: "Lesson 8: the fragile checkout, armoured step by step",
		Head:  []string{"stage", "browse ok", "browse/s", "checkout/s", "p99", "p99.9", "max", "pool peak", "breaker opens", "late work", "dup charges"},
		Rows: [][]string{
			{"0 fragile", "10.0%", "2.0", "0.0", "11004 ms", "11013 ms", "11023 ms", "200", "0", "≥ 386.6 s", "0"},
			{"1 +timeouts", "100.0%", "20.0", "0.0", "1218 ms", "1283 ms", "1290 ms", "123", "0", "386.6 s", "3085"},
			{"2 +budget", "100.0%", "20.0", "4.6", "1004 ms", "1016 ms", "1019 ms", "101", "0", "3.6 s", "2999"},
			{"3 +isolation", "100.0%", "20.0", "71.7", "122 ms", "244 ms", "355 ms", "14", "2", "0.0 s", "0"},
		},
	}
	ctx, problems := chromiumPageOf(t, func(w io.Writer) error { return WriteHTMLLead(w, phasedResults(), lead) }, 1280, 900)
	type overflow struct {
		Margin float64   `json:"margin"`
		Rights []float64 `json:"rights"`
		Scroll int       `json:"scroll"`
		Width  int       `json:"width"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[overflow](`(() => {
  const body = document.body, style = getComputedStyle(body);
  return {
    margin: body.getBoundingClientRect().right - parseFloat(style.paddingRight),
    rights: [...document.querySelectorAll("table")].map(t => t.getBoundingClientRect().right),
    scroll: document.documentElement.scrollWidth,
    width: window.innerWidth,
  };
})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rights) < 2 {
		t.Fatalf("%d tables on the page, want the lead's and the run's", len(got.Rights))
	}
	for i, right := range got.Rights {
		if right > got.Margin+0.5 {
			t.Errorf("table %d ends at %.0f px, past the page's margin at %.0f px", i, right, got.Margin)
		}
	}
	if got.Scroll > got.Width {
		t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", got.Scroll, got.Width)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged problems: %v", p)
	}
}
