package report

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestWriteHTMLLead: a lab's own table and lists sit above the run's
// figures, escaped like everything else, and the page stays whole.
func TestWriteHTMLLead(t *testing.T) {
	lead := Lead{
		Title: "Lesson 8 <stages>",
		Notes: []string{"each stage on a fresh shop"},
		Head:  []string{"stage", "browse ok"},
		Rows:  [][]string{{"0 fragile", "12.0%"}, {"3 +isolation", "100.0%"}},
		Lists: []List{{Title: "the suggest step", Items: []string{"orders/shipping --shipping-cap 60 ms"}}},
	}
	var b bytes.Buffer
	if err := WriteHTMLLead(&b, sampleResults(), lead); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	assertBalanced(t, page)
	if _, err := html.Parse(strings.NewReader(page)); err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	for _, want := range []string{`<section id="lead">`, "Lesson 8 &lt;stages&gt;", "<td>0 fragile</td>", `<td class="n">100.0%</td>`,
		"each stage on a fresh shop", "the suggest step", "orders/shipping --shipping-cap 60 ms"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if lead, runs := strings.Index(page, `id="lead"`), strings.Index(page, `id="runs"`); lead < 0 || runs < lead {
		t.Errorf("the lead is not above the runs (at %d, runs at %d)", lead, runs)
	}
	if n := len(svgFragments(page)); n != 8 {
		t.Errorf("%d charts, want the run's 8", n)
	}
	// Without a lead, the page has none.
	if strings.Contains(renderHTML(t, sampleResults()), `id="lead"`) {
		t.Error("WriteHTML shows a lead")
	}
}
