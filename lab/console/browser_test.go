package console_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab/shop"
)

// TestConsoleInChromium drives the console in headless Chromium (Debian's
// chromium package; .ci/run installs it) as a trainer would: it switches
// the mode, sets a fault, sends one checkout, then traffic from elsewhere
// and from the page, and sees each take effect — in the shop's own admin
// APIs and on the page. The page must log no error, throw no exception,
// and send no request off loopback. With MERCADO_SCREENSHOTS=<dir> it saves there, at 1280×720,
// the pictures in docs/console.md and the course: console.png (traffic),
// console-lesson7.png, console-drill76-naive.png, console-chain-only.png.
func TestConsoleInChromium(t *testing.T) {
	slowtest.Require(t, "Chromium")
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium) — the console's browser test needs it")
	}
	cfg := shop.EphemeralConfig()
	cfg.Network = true
	// A slow reservation and a slow charge, so that the budget visibly
	// shrinks from hop to hop.
	cfg.Catalog.Faults = mustFaults(t, "ReserveStock:latency=80ms")
	cfg.Payments.Faults = mustFaults(t, "CreateCharge:latency=120ms")
	s, base := startShop(t, cfg)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(1400, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems, offLoopback []string
	requests := 0
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, fmt.Sprintf("console %s: %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text+" "+describeException(e))
		case *network.EventRequestWillBeSent:
			requests++
			if u, err := url.Parse(e.Request.URL); err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
				offLoopback = append(offLoopback, e.Request.URL)
			}
		}
	}
	if err := chromedp.Listen(ctx, listen); err != nil {
		t.Fatal(err)
	}
	// The helpers take the test they run in: a subtest must not fail its
	// parent.
	run := func(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// waitFor polls a JavaScript predicate on the page, generously: the
	// machine may be busy.
	waitWithin := func(t *testing.T, limit time.Duration, what, predicate string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit))); err != nil {
			t.Fatalf("%s: the page never showed it (%s): %v", what, predicate, err)
		}
	}
	waitFor := func(t *testing.T, what, predicate string) { t.Helper(); waitWithin(t, 60*time.Second, what, predicate) }
	// screenshot saves the page at 1280×720 as name, after wait, when
	// MERCADO_SCREENSHOTS names a directory.
	screenshot := func(t *testing.T, name string, wait time.Duration) {
		t.Helper()
		dir := os.Getenv("MERCADO_SCREENSHOTS")
		if dir == "" {
			return
		}
		run(t, "let the page fill", chromedp.EmulateViewport(1280, 720), chromedp.Sleep(wait),
			chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		run(t, "back to the test's size", chromedp.EmulateViewport(1400, 900))
	}
	run(t, "open the console", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base))
	waitFor(t, "the event stream", `document.querySelector("#conn").textContent.includes("live")`)
	waitFor(t, "the mode", `document.querySelector("#mode-now").textContent.includes("budgeted · all 5 services")`)

	t.Run("switching the mode switches every service", func(t *testing.T) {
		for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
			run(t, "click "+string(m), chromedp.Click(chromedp.CSS(`button[data-mode="`+string(m)+`"]`)))
			eventually(t, "every service in "+string(m), func() error {
				for _, p := range s.Processes() {
					v, err := admin.Client{URL: "http://" + p.AdminAddr}.Mode(ctx)
					if err != nil {
						return err
					}
					if v.Mode != m {
						return fmt.Errorf("%s is in %s", p.Name, v.Mode)
					}
				}
				return nil
			})
			waitFor(t, "the page's mode", `document.querySelector("#mode-now").textContent.includes("`+string(m)+` · all 5 services")`)
		}
	})

	t.Run("a fault set in the page shows in the next checkout's hop", func(t *testing.T) {
		run(t, "set shipping's fault",
			chromedp.SetValue(chromedp.CSS("#fault-service"), "shipping"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#fault-service").dispatchEvent(new Event("change"))`),
			chromedp.SetValue(chromedp.CSS("#fault-method"), "CreateShipment"),
			chromedp.SetValue(chromedp.CSS("#fault-latency"), "150ms"),
			chromedp.Click(chromedp.CSS("#set-fault")))
		eventually(t, "shipping's fault", func() error {
			v, err := admin.Client{URL: "http://" + s.Shipping.AdminAddr}.Faults(ctx)
			if err != nil {
				return err
			}
			if v.Faults["CreateShipment"] != (faults.Spec{Latency: 150 * time.Millisecond}) {
				return fmt.Errorf("shipping's faults are %v", v.Faults)
			}
			return nil
		})
		waitFor(t, "the change confirmed with what shipping now has, read back from it",
			`document.querySelector("#message").textContent.includes("shipping now has CreateShipment: latency=150ms")`)
		run(t, "send one checkout", chromedp.Click(chromedp.CSS("#one-checkout")))
		waitFor(t, "the checkout's shipping hop", `(() => { const r = document.querySelector('#hops tr[data-hop="shipping"]'); return r && Number(r.dataset.took) >= 150 })()`)
	})

	t.Run("the fault form starts from what the chosen method has, and a change says what the shop now has", func(t *testing.T) {
		waitFor(t, "shipping's fault in the page's state", `document.querySelector("#faults-now").textContent.includes("shipping CreateShipment: latency=150ms")`)
		choose := func(service, method string) {
			run(t, "choose "+service+" "+method,
				chromedp.SetValue(chromedp.CSS("#fault-service"), service),
				chromedp.Evaluate[chromedp.Void](`document.querySelector("#fault-service").dispatchEvent(new Event("change"))`),
				chromedp.SetValue(chromedp.CSS("#fault-method"), method),
				chromedp.Evaluate[chromedp.Void](`document.querySelector("#fault-method").dispatchEvent(new Event("change"))`))
		}
		// The shop started with payments' CreateCharge at 120 ms (above),
		// its fraud screen with no fault, and the page set shipping's
		// booking to 150 ms.
		for _, c := range []struct{ service, method, latency string }{
			{"payments", "CreateCharge", "120ms"},
			{"payments", "ScreenOrder", ""},
			{"shipping", "CreateShipment", "150ms"},
		} {
			choose(c.service, c.method)
			if v := evaluate[string](t, ctx, `document.querySelector("#fault-latency").value`); v != c.latency {
				t.Errorf("%s %s: the form shows latency %q, want %q", c.service, c.method, v, c.latency)
			}
		}
	})

	t.Run("the chain shows the budget shrinking hop by hop", func(t *testing.T) {
		rem := map[string]float64{}
		for _, hop := range []string{"orders", "catalog", "fraud", "payments", "shipping"} {
			rem[hop] = evaluate[float64](t, ctx, `Number(document.querySelector('#hops tr[data-hop="`+hop+`"]').dataset.rem)`)
		}
		// In budgeted mode catalog and the fraud screen start at once;
		// the charge starts when both are back (80 ms on), shipping when
		// the charge is (120 ms on).
		if !(rem["orders"] > rem["catalog"] && rem["catalog"] > rem["payments"]+70 && rem["payments"] > rem["shipping"]+110) {
			t.Errorf("remaining budget on arrival %v: want orders > catalog > payments (by 80 ms) > shipping (by 120 ms)", rem)
		}
		if d := rem["catalog"] - rem["fraud"]; d > 20 || d < -20 {
			t.Errorf("catalog arrived with %.1f ms and the fraud screen with %.1f: want them together, as budgeted runs them at once", rem["catalog"], rem["fraud"])
		}
		bars := evaluate[float64](t, ctx, `document.querySelectorAll("#chain rect.budget").length`)
		if bars < 6 {
			t.Errorf("the chain draws %v budget bars, want one for the client, gateway, orders and each leaf called", bars)
		}
	})

	t.Run("traffic sent from elsewhere is charted as the gateway answered it, with the mode switched from elsewhere as a band", func(t *testing.T) {
		done := sendElsewhere(t, s.GatewayURL(), 10, 5, 4*time.Second)
		waitFor(t, "the gateway's view, said in words", `document.querySelector("#charts-view").dataset.view === "gateway" && document.querySelector("#charts-view").textContent.includes("the gateway answered (sent from elsewhere")`)
		waitFor(t, "points on the goodput chart", `Number(document.querySelector("#chart-goodput").dataset.points) >= 4`)
		gw := admin.Client{URL: "http://" + s.Gateway.AdminAddr}
		if _, err := gw.Switch(ctx, admin.ModeChange{Mode: mode.Naive}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the switch as a band named with the mode and the faults",
			`[...document.querySelectorAll("#chart-goodput text.band-label")].some((t) => t.textContent.startsWith("naive · ⚠") && t.querySelector("title").textContent.includes("payments CreateCharge:latency=120ms"))`)
		<-done
		for _, size := range [][2]int64{{1024, 768}, {1280, 720}} {
			run(t, "resize", chromedp.EmulateViewport(size[0], size[1]), chromedp.Sleep(1500*time.Millisecond))
			if problems := evaluate[[]string](t, ctx, layoutProblems); len(problems) > 0 {
				t.Errorf("at %d×%d, with the bands' names:\n  %s", size[0], size[1], strings.Join(problems, "\n  "))
			}
			if px := evaluate[float64](t, ctx, smallestChartText); px < 16 {
				t.Errorf("at %d×%d the charts' smallest text is %.1f px, want ≥ 16", size[0], size[1], px)
			}
		}
		run(t, "back to the test's size", chromedp.EmulateViewport(1400, 900))
		if _, err := gw.Switch(ctx, admin.ModeChange{Mode: mode.Budgeted}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the page's mode", `document.querySelector("#mode-now").textContent.includes("budgeted · all 5 services")`)
	})

	t.Run("traffic started in the page reaches the live charts", func(t *testing.T) {
		run(t, "start traffic",
			chromedp.SetValue(chromedp.CSS("#rate-checkout"), "10"),
			chromedp.SetValue(chromedp.CSS("#rate-browse"), "5"),
			chromedp.Click(chromedp.CSS("#start-traffic")))
		waitFor(t, "points on the goodput chart", `Number(document.querySelector("#chart-goodput").dataset.points) >= 6`)
		waitFor(t, "points on the latency chart", `Number(document.querySelector("#chart-latency").dataset.points) >= 6`)
		waitFor(t, "a pool at work", `document.querySelectorAll("#pools .pool").length > 0`)
		waitFor(t, "traced checkouts", `document.querySelectorAll("#checkouts li").length >= 4`)
		screenshot(t, "console.png", 6*time.Second)
		// Picking an older checkout shows its hops, and stays on it after
		// newer checkouts push it out of the list.
		n := int(evaluate[float64](t, ctx, `Number(document.querySelectorAll("#checkouts button")[2].dataset.n)`))
		run(t, "pick an older checkout", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#checkouts button[data-n="%d"]`, n))))
		showsIt := fmt.Sprintf(`document.querySelector("#hops-caption").textContent.startsWith("Hops of checkout #%d ") && document.querySelector("#chain-caption").textContent.startsWith("Checkout #%d:")`, n, n)
		waitFor(t, "its hops and chain", showsIt)
		waitFor(t, "it leaving the list", fmt.Sprintf(`!document.querySelector('#checkouts button[data-n="%d"]')`, n))
		if !evaluate[bool](t, ctx, showsIt) {
			t.Errorf("checkout #%d left the list and the page stopped showing it", n)
		}
		run(t, "stop traffic", chromedp.Click(chromedp.CSS("#stop-traffic")))
		waitFor(t, "the traffic stopped", `document.querySelector("#traffic-now").textContent.includes("stopped")`)
	})

	t.Run("a lesson preset sets the shop up in one click", func(t *testing.T) {
		run(t, "click Lesson 7", chromedp.Click(chromedp.CSS(`button[data-preset="lesson7"]`)))
		waitFor(t, "the preset confirmed, with what to watch", `document.querySelector("#message").textContent.startsWith("✓ Applied Lesson 7. The chain")`)
		waitFor(t, "the traffic form showing the lesson's traffic", `document.querySelector("#rate-checkout").value === "10" && document.querySelector("#deadline").value === "1200"`)
		waitFor(t, "the button pressed and its sentence shown", `document.querySelector('button[data-preset="lesson7"]').getAttribute("aria-pressed") === "true" && document.querySelector("#lesson-watch").textContent.startsWith("Lesson 7: ")`)
		// Lesson 7's chain, budgeted: ~1200 ms on arrival at orders, what
		// catalog's 280 ms left at payments, and shipping clipped to the
		// rest, once a checkout of the preset's traffic is shown.
		waitFor(t, "lesson 7's chain", `(() => {
			const rem = (hop) => { const r = document.querySelector('#hops tr[data-hop="' + hop + '"]'); return r ? Number(r.dataset.rem) : NaN };
			return rem("orders") > 1150 && rem("payments") < rem("orders") - 270 && rem("shipping") < rem("payments") - 700 })()`)
		screenshot(t, "console-lesson7.png", 3*time.Second)
		run(t, "click Reset", chromedp.Click(chromedp.CSS(`button[data-preset="healthy"]`)))
		eventually(t, "every fault cleared", func() error {
			for _, p := range s.Processes() {
				v, err := admin.Client{URL: "http://" + p.AdminAddr}.Faults(ctx)
				if err != nil {
					return err
				}
				if len(v.Faults) > 0 {
					return fmt.Errorf("%s has faults %v", p.Name, v.Faults)
				}
			}
			return nil
		})
		run(t, "stop traffic", chromedp.Click(chromedp.CSS("#stop-traffic")))
	})

	t.Run("a scenario run from the page is charted live and ends with its claims", func(t *testing.T) {
		run(t, "run lesson7, quick",
			chromedp.SetValue(chromedp.CSS("#scenario"), "lesson7"),
			chromedp.Click(chromedp.CSS("#run-scenario")))
		waitFor(t, "the run's answers on the goodput chart while it runs, its faulty phases shaded",
			`document.querySelector("#run").textContent.includes("· running") && Number(document.querySelector("#chart-goodput").dataset.points) >= 3 && document.querySelectorAll("#chart-goodput rect.band").length > 0`)
		waitFor(t, "the verdict", `document.querySelector("#run").textContent.includes("Verdict: ")`)
		claims := evaluate[[]string](t, ctx, `[...document.querySelectorAll("#run li")].map((li) => li.textContent)`)
		if len(claims) == 0 {
			t.Fatal("the finished run shows no claims")
		}
		for _, c := range claims {
			if !strings.HasPrefix(c, "PASS  ") && !strings.HasPrefix(c, "FAIL  ") || !strings.Contains(c, ": ") {
				t.Errorf("claim %q: want PASS or FAIL, the claim in words, and the measured value", c)
			}
		}
	})

	t.Run("Drill 76 takes browsing down in naive mode, and the layout fits a projector at 1024×768, 1280×720 and 1920×1080", func(t *testing.T) {
		// Drill 76 in naive mode fills the pools (the longest labels) and
		// takes browsing down; in budgeted mode browsing is back.
		browsing := func(cond string) string {
			return `(() => { const b = view.tick && view.tick.classes.browse; return !!b && b.length >= 3 && b.slice(-2).every((p) => ` + cond + `) })()`
		}
		// The bounds are generous: the shop runs in this test's process,
		// race detector and all, where a busy machine drains a naive
		// backlog many times slower than the lab's own build (about 2 s by
		// hand, docs/console.md).
		clicked := time.Now()
		run(t, "click Drill 76", chromedp.Click(chromedp.CSS(`button[data-preset="drill76"]`)))
		waitWithin(t, 2*time.Minute, "browsing dark in naive mode", browsing("p.good === 0"))
		t.Logf("Drill 76: browsing dark %v after the click", time.Since(clicked).Round(100*time.Millisecond))
		waitFor(t, "a full pool", `document.querySelector("#pools").textContent.includes("FULL")`)
		screenshot(t, "console-drill76-naive.png", 5*time.Second)
		defer func() {
			clicked := time.Now()
			run(t, "switch to budgeted", chromedp.Click(chromedp.CSS(`button[data-mode="budgeted"]`)))
			waitWithin(t, 2*time.Minute, "browsing green in budgeted mode", browsing("p.good >= 15"))
			t.Logf("Drill 76: browsing green %v after the switch to budgeted", time.Since(clicked).Round(100*time.Millisecond))
			run(t, "back to the test's size, and a healthy shop", chromedp.EmulateViewport(1400, 900),
				chromedp.Click(chromedp.CSS(`button[data-preset="healthy"]`)))
			run(t, "stop traffic", chromedp.Click(chromedp.CSS("#stop-traffic")))
		}()
		for _, size := range [][2]int64{{1024, 768}, {1280, 720}, {1920, 1080}} {
			run(t, "resize", chromedp.EmulateViewport(size[0], size[1]), chromedp.Sleep(1500*time.Millisecond))
			if problems := evaluate[[]string](t, ctx, layoutProblems); len(problems) > 0 {
				t.Errorf("at %d×%d:\n  %s", size[0], size[1], strings.Join(problems, "\n  "))
			}
			if size[0] == 1280 {
				if px := evaluate[float64](t, ctx, smallestChartText); px < 16 {
					t.Errorf("at 1280×720 the charts' smallest text is %.1f px, want ≥ 16", px)
				}
			}
		}
		// The chain alone, for the big moment, and back with Esc.
		run(t, "chain only", chromedp.EmulateViewport(1280, 720), chromedp.Click(chromedp.CSS("#chain-only")), chromedp.Sleep(300*time.Millisecond))
		if os.Getenv("MERCADO_SCREENSHOTS") != "" {
			screenshot(t, "console-chain-only.png", time.Second)
			run(t, "chain only, again", chromedp.EmulateViewport(1280, 720))
		}
		if got := evaluate[bool](t, ctx, `document.querySelector(".right").getClientRects().length === 0 && document.querySelector("#chain").getBoundingClientRect().width > 0.9 * innerWidth && document.querySelector("#chain").getBoundingClientRect().bottom <= innerHeight`); !got {
			t.Error("chain only: the controls still show, or the chain is not as wide as the window, or does not fit in it")
		}
		run(t, "Esc", chromedp.KeyEvent(kb.Escape), chromedp.Sleep(300*time.Millisecond))
		if got := evaluate[bool](t, ctx, `document.querySelector(".right").getClientRects().length > 0 && document.querySelector("#chain-only").getAttribute("aria-pressed") === "false"`); !got {
			t.Error("Esc did not bring the controls back")
		}
	})

	message, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#message")))
	mu.Lock()
	defer mu.Unlock()
	if strings.HasPrefix(message, "✗") {
		t.Errorf("the page's last message is an error: %s", message)
	}
	if len(problems) > 0 {
		t.Errorf("the page logged problems: %v", problems)
	}
	if requests == 0 {
		t.Error("saw no request at all: the network listener is not working")
	}
	if len(offLoopback) > 0 {
		t.Errorf("requests left loopback: %v", offLoopback)
	}
}

func describeException(e *runtime.EventExceptionThrown) string {
	if e.ExceptionDetails.Exception != nil {
		return e.ExceptionDetails.Exception.Description
	}
	return ""
}

// evaluate returns the value of a JavaScript expression on the page.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// eventually retries check for up to 20 s, until it passes.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// layoutProblems lists what a projector would show badly: a page wider
// than the window, a header on two lines, panels on top of each other,
// anything sticking out of its panel, and text cut by its box in the
// chain.
const layoutProblems = `(() => {
	const problems = [];
	const r = (e) => e.getBoundingClientRect();
	const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.split(" ")[0] : "") + " " + JSON.stringify((e.textContent || "").trim().slice(0, 40));
	const W = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth > W + 1) problems.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + W + " px window");
	const h1 = document.querySelector("h1");
	if (r(h1).height > 2 * parseFloat(getComputedStyle(h1).fontSize)) problems.push("the title wraps: " + r(h1).height + " px high");
	const panels = [...document.querySelectorAll("main section")].filter((s) => !s.hidden && s.getClientRects().length > 0);
	for (let i = 0; i < panels.length; i++) {
		for (let j = i + 1; j < panels.length; j++) {
			const a = r(panels[i]), b = r(panels[j]);
			if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) problems.push(name(panels[i]) + " overlaps " + name(panels[j]));
		}
	}
	for (const p of panels) {
		const box = r(p);
		for (const e of p.querySelectorAll("*")) {
			if (e.closest("[hidden], details:not([open]) > :not(summary)") || e.getClientRects().length === 0) continue;
			const q = r(e);
			if (q.width > 0 && (q.left < box.left - 1 || q.right > box.right + 1)) problems.push(name(e) + " sticks out of its panel (" + Math.round(q.left) + "–" + Math.round(q.right) + " in " + Math.round(box.left) + "–" + Math.round(box.right) + ")");
		}
	}
	for (const g of document.querySelectorAll("#chain g.node")) {
		const box = r(g.querySelector("rect.box"));
		const texts = [...g.querySelectorAll("text")].filter((t) => r(t).width > 0);
		for (const t of texts) {
			if (r(t).right > box.right + 1) problems.push("chain text cut by its box: " + JSON.stringify(t.textContent));
		}
		for (let i = 0; i < texts.length; i++) {
			for (let j = i + 1; j < texts.length; j++) {
				const a = r(texts[i]), b = r(texts[j]);
				if (a.left < b.right && b.left < a.right && a.top < b.bottom - 2 && b.top < a.bottom - 2) problems.push("chain texts on top of each other: " + JSON.stringify(texts[i].textContent) + " and " + JSON.stringify(texts[j].textContent));
			}
		}
	}
	return problems.slice(0, 20);
})()`

// smallestChartText is the smallest rendered font size of the charts'
// text, in CSS pixels: an SVG's text scales with it.
const smallestChartText = `(() => {
	let least = Infinity;
	for (const svg of document.querySelectorAll("svg.chart")) {
		const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
		for (const t of svg.querySelectorAll("text")) least = Math.min(least, parseFloat(getComputedStyle(t).fontSize) * scale);
	}
	return least;
})()`
