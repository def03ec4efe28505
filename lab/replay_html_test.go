package lab

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// budgetDiagrams reads a replay page's diagrams: per run, the budget left
// (ms) each hop's row shows, in order, and the run's heading.
func budgetDiagrams(t *testing.T, page []byte) (titles []string, left [][]int64) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch {
		case n.Data == "section" && attr(n, "class") == "run":
			titles = append(titles, "")
			left = append(left, nil)
		case n.Data == "h2" && len(titles) > 0 && n.FirstChild != nil:
			titles[len(titles)-1] = n.FirstChild.Data
		case n.Data == "text" && attr(n, "class") == "hop-left":
			v, err := strconv.ParseInt(attr(n, "data-left-ms"), 10, 64)
			if err != nil {
				t.Fatalf("hop-left %q: %v", attr(n, "data-left-ms"), err)
			}
			left[len(left)-1] = append(left[len(left)-1], v)
		}
	}
	return titles, left
}

// checkShrinking: each run's rows show the deadline less what came
// before each hop, and in a chain called one hop after the other the
// budget only shrinks down the page. (Hops called side by side start
// together, in either order.)
func checkShrinking(t *testing.T, runs [][]int64, want [][]int64, inSeries ...bool) {
	t.Helper()
	if len(runs) != len(want) {
		t.Fatalf("%d diagrams, want %d", len(runs), len(want))
	}
	for i := range runs {
		if !slices.Equal(runs[i], want[i]) {
			t.Errorf("diagram %d shows %v ms left, want %v", i, runs[i], want[i])
		}
		if i < len(inSeries) && !inSeries[i] {
			continue
		}
		for j := 1; j < len(runs[i]); j++ {
			if runs[i][j] > runs[i][j-1] {
				t.Errorf("diagram %d: the budget grew from %d to %d ms", i, runs[i][j-1], runs[i][j])
			}
		}
	}
}

func TestLesson7PageDrawsTheShrinkingBudget(t *testing.T) {
	cfg := DefaultLesson7()
	hops := func(timeout3 int64, clipped bool) []ReplayHop {
		return []ReplayHop{
			{Name: "catalog", StartMS: 0, TimeoutMS: 300, TookMS: 281, Outcome: "ok", ElapsedMS: 281},
			{Name: "payments", StartMS: 281, TimeoutMS: 800, TookMS: 761, Outcome: "ok", ElapsedMS: 1042},
			{Name: "shipping", StartMS: 1042, TimeoutMS: timeout3, TookMS: timeout3, Outcome: "timeout", ElapsedMS: 1042 + timeout3, ClippedByBudget: clipped},
		}
	}
	res := Lesson7Result{
		Naive:    ReplayRun{DeadlineMS: 1200, TotalMS: 1345, Verdict: "OVER", HTTPStatus: 504, Hops: hops(300, false)},
		Budgeted: ReplayRun{DeadlineMS: 1200, TotalMS: 1190, Verdict: "WITHIN", HTTPStatus: 201, Hops: hops(145, true)},
	}
	var page bytes.Buffer
	if err := res.WriteHTML(&page, cfg); err != nil {
		t.Fatal(err)
	}
	titles, left := budgetDiagrams(t, page.Bytes())
	checkShrinking(t, left, [][]int64{{1200, 919, 158}, {1200, 919, 158}})
	if len(titles) != 2 || !strings.HasPrefix(titles[0], "naive") || !strings.HasPrefix(titles[1], "budgeted") {
		t.Errorf("runs %q, want naive then budgeted", titles)
	}
	for _, want := range []string{"OVER: answered after 1,345 ms", "WITHIN: answered after 1,190 ms", "145 ms past the deadline", "clipped by the budget", "floor 20 ms", FraudLeftOut} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestLesson7PageMarksSkippedAndUnreportedHops(t *testing.T) {
	res := Lesson7Result{
		Naive: ReplayRun{DeadlineMS: 1200, TotalMS: 1201, Verdict: "OVER", HTTPStatus: 504, Hops: []ReplayHop{
			{Name: "catalog", Outcome: "unknown", Note: NotReported}, {Name: "payments", Outcome: "unknown", Note: NotReported},
		}},
		Budgeted: ReplayRun{DeadlineMS: 1200, TotalMS: 1195, Verdict: "WITHIN", HTTPStatus: 503, Hops: []ReplayHop{
			{Name: "catalog", StartMS: 0, TimeoutMS: 300, TookMS: 290, Outcome: "ok", ElapsedMS: 290},
			{Name: "payments", StartMS: 290, TimeoutMS: 800, TookMS: 895, Outcome: "ok", ElapsedMS: 1185},
			{Name: "shipping", StartMS: 1185, Outcome: "skipped", Note: SkipInsufficientBudget, ElapsedMS: 1185},
		}},
	}
	var page bytes.Buffer
	if err := res.WriteHTML(&page, DefaultLesson7()); err != nil {
		t.Fatal(err)
	}
	_, left := budgetDiagrams(t, page.Bytes())
	// Nothing is known of naive's hops; budgeted's skipped shipping shows
	// the 15 ms it was left, below the floor.
	checkShrinking(t, left, [][]int64{nil, {1200, 910, 15}})
	for _, want := range []string{"not called: " + SkipInsufficientBudget, NotReported} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
