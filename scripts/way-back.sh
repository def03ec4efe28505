#!/usr/bin/env bash
# Measures the answer's way back on this machine: how long after a call is
# cut at what was left of the budget its caller's answer reaches the client.
# docs/deadlines.md chose the default margin from its figures.
#
#   scripts/way-back.sh [N]        # N checkouts, 400 by default (about 3 min)
#
# It serves the shop (budgeted, breakers off so that every checkout reaches
# shipping) with a margin of 50 ms, wide enough that no answer is cut on
# its way back, and shipping hanging, so that shipping's call is always cut
# by the budget. It sends N checkouts one after the other with
# X-Deadline-Ms: 400 and reads each one's Server-Timing:
#
#   orders' way back = orders' duration at the gateway − when orders called
#                      shipping − shipping's timeout: from the cut to
#                      orders' answer reaching the gateway. A margin
#                      shorter than this turns the checkout into a 504.
#   the whole way    = the client's total − (400 − 2 × 50): from the cut to
#                      the client, through the gateway. Two margins shorter
#                      than this answer after the client's deadline.
#
# Run it as the machine is when the lab runs: quiet, or beside other work
# (`stress-ng --cpu 1` keeps one core busy). It needs curl, builds
# Mercado first, and serves the shop on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-400}
. scripts/serve-shop.sh
serve_shop way-back --mode budgeted --margin 50ms --mechanisms breakers=off \
  --shipping-fault 'CreateShipment:hang=5s'

rows=$(mktemp)
headers=$(mktemp)
for i in $(seq "$n"); do
  total=$(curl -s -D "$headers" -o /dev/null -w '%{time_total}' --max-time 3 \
    -X POST "$gateway/api/checkout" -H 'Content-Type: application/json' \
    -H 'X-Deadline-Ms: 400' -H "Idempotency-Key: \"way-back-$$-$i\"" \
    -d '{"customer":"ana","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Main St"}')
  timing=$(tr -d '\r' <"$headers" | grep -i '^server-timing:' || true)
  orders=$(grep -o 'orders;dur=[0-9.]*' <<<"$timing" | cut -d= -f2)
  shipping=$(grep -o 'shipping;dur=[^,]*' <<<"$timing" || true)
  start=$(grep -o 'start=[0-9.]*' <<<"$shipping" | cut -d= -f2)
  timeout=$(grep -o 'timeout=[0-9.]*' <<<"$shipping" | cut -d= -f2)
  if [ -z "$orders" ] || [ -z "$start" ] || [ -z "$timeout" ]; then
    echo "checkout $i: no hop timings in its answer" >&2
    continue
  fi
  echo "$total $orders $start $timeout" >>"$rows"
  [ $((i % 50)) -eq 0 ] && echo "way-back: $i of $n checkouts" >&2
done

# quantiles FIELD: p50, p90, p99, p99.9 and the maximum of one column.
quantiles() {
  sort -n | awk '{v[NR] = $1} END {
    if (NR == 0) { print "no checkouts"; exit }
    q = "p50 p90 p99 p99.9"; split("0.5 0.9 0.99 0.999", f, " "); split(q, name, " ")
    for (i = 1; i <= 4; i++) { k = int(NR * f[i]); if (k < 1) k = 1; printf "%s %.1f ms  ", name[i], v[k] }
    printf "max %.1f ms  (%d checkouts)\n", v[NR], NR }'
}
printf "orders' way back:  "
awk '{print $2 - $3 - $4}' "$rows" | quantiles
printf "the whole way:     "
awk '{print $1 * 1000 - 300}' "$rows" | quantiles
