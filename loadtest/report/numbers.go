package report

import (
	"math"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// english prints numbers with thousands separators: "12,345".
var english = message.NewPrinter(language.English)

// num prints v with the given decimals and thousands separators; "-"
// when v is not a number.
func num(v float64, decimals int) string {
	if !isFinite(v) {
		return "-"
	}
	return english.Sprintf("%.*f", decimals, v)
}

// times prints how many times larger one figure is than another, as a
// reader says it: "1.6×", "35×", "1,020×".
func times(q float64) string {
	switch {
	case q >= 9.95:
		return num(math.Round(q), 0) + "×"
	default:
		return num(q, 1) + "×"
	}
}

// formatRatio prints the ratio column's q (the second mode's figure over
// the first's): "1.58×" near one, "35×" above, and "1/300" far below one,
// so that a cut a hundredfold never reads 0.00×.
func formatRatio(q float64) string {
	switch {
	case !isFinite(q) || q < 0:
		return "-"
	case q == 0:
		return "0×"
	case q >= 10:
		return times(q)
	case q >= 0.095:
		return num(q, 2) + "×"
	}
	return "1/" + num(math.Round(1/q), 0)
}
