// Package report shows a scenario run (loadtest.Results) to people: a
// terminal table, one column per mode with the budgeted-to-naive ratio
// (WriteTable), and one self-contained HTML page whose first screen tells
// the story — the verdict, the headline figures, the goodput chart with
// the fault shaded — above the settings, the checks, the tables and SVG
// charts of every class's latency and goodput over time, pools and
// breakers (WriteHTML). A replay's single checkouts it draws as the
// budget shrinking hop by hop (WriteBudgetPage).
package report
