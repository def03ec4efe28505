// Package report shows a scenario run (loadtest.Results) to people: a
// terminal table, one column per mode with the budgeted-to-naive ratio
// (WriteTable), and one self-contained HTML page with SVG charts of every
// class's latency and goodput over time, pools and breakers, fault windows
// shaded (WriteHTML).
package report
