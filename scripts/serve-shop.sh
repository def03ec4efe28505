# Sourced by the measuring scripts: serve_shop NAME FLAGS... builds
# Mercado, serves the whole shop on free ports with serve all's FLAGS,
# stops it when the script exits, and sets $gateway to the shop's URL.
serve_shop() {
  local name=$1 bin out
  shift
  bin=$(mktemp -d)/mercado
  go build -o "$bin" ./cmd/mercado
  out=$(mktemp)
  "$bin" serve all --ephemeral-ports "$@" 2>"$out" &
  shop=$!
  trap 'kill $shop 2>/dev/null; wait $shop 2>/dev/null || true' EXIT
  gateway=
  for _ in $(seq 100); do
    gateway=$(sed -n "s|^Mercado's shop: *||p" "$out")
    [ -n "$gateway" ] && return
    sleep 0.1
  done
  echo "$name: the shop did not start:" >&2
  cat "$out" >&2
  exit 1
}
