package report

import (
	"io"

	"github.com/mercado-lab/mercado/loadtest"
)

// Lead is a lab's own summary, shown above a run's figures: its table (a
// heading and rows of cells), notes on how to read it, and lists of lines
// (the values the lab chose and why, the claims it checked).
type Lead struct {
	Title string
	Notes []string
	Head  []string
	Rows  [][]string
	Lists []List
}

// List is a titled list of lines in a Lead.
type List struct {
	Title string
	Items []string
}

// WriteHTMLLead writes the run as WriteHTML does, with lead at the top.
// Each mode of the run is one column of the tables and one line of the
// charts, so a lab that names its modes after its stages gets charts
// across its stages.
func WriteHTMLLead(w io.Writer, r loadtest.Results, lead Lead) error {
	rep := newHTMLReport(r)
	rep.Lead = &lead
	return reportPage.Execute(w, rep)
}
