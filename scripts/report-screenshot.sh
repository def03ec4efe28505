#!/usr/bin/env bash
# Takes docs/images/report.png, the report's first screen at 1400×900, from
# a real run: it runs a scenario lab (drill76 with --quick by default, about
# 15 s a mode; pass --full for the 50 s run, or another scenario's name),
# then opens that run's report in headless Chromium through the report's
# first-screen test, which checks that the verdict, both modes' headline
# figures and the goodput chart with its fault band are above the fold and
# writes the screenshot.
#
#   scripts/report-screenshot.sh            # drill76 --quick
#   scripts/report-screenshot.sh --full     # drill76, full length
#   scripts/report-screenshot.sh game-day   # another scenario, --quick
#
# Needs: Go, chromium (apt-get install chromium). A busy machine makes the
# run INVALID (the load generator falls behind); the report says so on its
# first screen, so take the screenshot on a quiet one.
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=drill76
quick=--quick
for arg in "$@"; do
  case "$arg" in
    --full) quick= ;;
    -*) echo "report-screenshot: unknown flag $arg" >&2; exit 2 ;;
    *) scenario=$arg ;;
  esac
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go run ./cmd/mercado lab "$scenario" $quick --out "$out"
mkdir -p docs/images
MERCADO_REPORT_RESULTS="$out/results.json" MERCADO_SCREENSHOTS="$PWD/docs/images" \
  go test -count=1 -run '^TestReportFirstScreen$' ./loadtest/report/
echo "wrote docs/images/report.png from $scenario ${quick:-(full length)}"
