#!/usr/bin/env bash
# Counts how many of lesson 7's budgeted checkouts through `serve all`
# answer within their deadline on this machine, as a learner sends them:
# catalog 280 ms, payments 760 ms, shipping's carrier hanging, one
# checkout after the other with X-Deadline-Ms: 1200, and curl giving up
# at 1.2 s. docs/deadlines.md gives its figures, quiet and with a core
# kept busy.
#
#   scripts/deadline-tries.sh [N] [serve all's flags...]
#
# N is 100 by default (about 2 min). Shipping's breaker opens after a few
# hung calls and later checkouts skip it; pass `--mechanisms breakers=off`
# to have every checkout's call to shipping cut by the budget, the answer's
# tightest way back. It builds Mercado first and serves the shop on free
# ports.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-100}
shift || true
. scripts/serve-shop.sh
serve_shop deadline-tries --mode budgeted \
  --catalog-fault 'ReserveStock:latency=280ms' \
  --payments-fault 'CreateCharge:latency=760ms' \
  --shipping-fault 'CreateShipment:hang=5s' "$@"

within=0
rows=$(mktemp)
for i in $(seq "$n"); do
  # curl exits 28 when it gives up at 1.2 s: that try missed its deadline.
  line=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 1.2 \
    -X POST "$gateway/api/checkout" -H 'Content-Type: application/json' \
    -H 'X-Deadline-Ms: 1200' -H "Idempotency-Key: \"tries-$$-$i\"" \
    -d '{"customer":"ana","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Main St"}' || true)
  echo "$line" >>"$rows"
  case $line in 2*) within=$((within + 1)) ;; esac
  [ $((i % 25)) -eq 0 ] && echo "deadline-tries: $i of $n checkouts" >&2
done
echo "answered 2xx within 1.2 s: $within of $n"
echo "statuses: $(cut -d' ' -f1 "$rows" | sort | uniq -c | awk '{printf "%s×%s ", $1, $2}')"
sort -n -k2 "$rows" | awk '{t[NR] = $2 * 1000} END {
  printf "time to answer: p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", t[int(NR * 0.5)], t[int(NR * 0.99)], t[NR] }'
