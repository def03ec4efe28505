#!/usr/bin/env bash
# Runs the compose stack for real on this machine's Docker engine and checks
# it from the outside: build the image, start PostgreSQL and the five
# services, wait until they are healthy, browse, check out (201, then the
# same Idempotency-Key replayed), switch the mode through the gateway's
# admin API, optionally run the load test, and tear everything down (also
# when a step fails). It talks to 127.0.0.1:8080 only.
#
# Usage: scripts/compose-smoke.sh [--stand-ins] [--lab] [--keep]
#   --stand-ins  first run scripts/base-images.sh, for a machine that cannot
#                pull images (it builds or refreshes local stand-ins for
#                the base images, and keeps what is up to date)
#   --lab        also run `docker compose run --rm lab` (about 40 s of load)
#   --keep       leave the stack running at the end (tear down: down -v)
# COMPOSE picks the client: "docker compose" when present, else
# "docker-compose" (Debian's 1.29).
set -euo pipefail
cd "$(dirname "$0")/.."

lab=false
keep=false
stand_ins=false
for arg in "$@"; do
	case "$arg" in
	--stand-ins) stand_ins=true ;;
	--lab) lab=true ;;
	--keep) keep=true ;;
	*)
		echo "compose-smoke: unknown argument $arg" >&2
		exit 2
		;;
	esac
done

if [ -z "${COMPOSE:-}" ]; then
	if docker compose version >/dev/null 2>&1; then
		COMPOSE="docker compose"
	else
		COMPOSE=docker-compose
	fi
fi
# The project name in .env, and the stack always started in its default
# mode, whatever the shell says.
export MERCADO_MODE=budgeted
compose() { $COMPOSE "$@"; }
say() { printf '\ncompose-smoke: %s\n' "$*"; }
fail() {
	printf 'compose-smoke: FAIL: %s\n' "$*" >&2
	exit 1
}

teardown() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		say "the services' last logs"
		compose logs --no-color --tail=30 || true
	fi
	if $keep && [ $rc -eq 0 ]; then
		say "left running; tear down with: $COMPOSE down -v"
	else
		say "tearing down"
		compose --profile lab down -v --remove-orphans || true
	fi
	exit $rc
}
trap teardown EXIT

say "using $COMPOSE ($(compose version --short 2>/dev/null || compose version | head -1))"
if $stand_ins; then
	say "local stand-ins for the base images (scripts/base-images.sh)"
	scripts/base-images.sh
fi

say "building the image"
compose build gateway

say "starting PostgreSQL and the five services"
compose up -d

say "waiting until every service is healthy"
services="postgres catalog payments shipping orders gateway"
deadline=$((SECONDS + 180))
while :; do
	pending=""
	for s in $services; do
		id=$(compose ps -q "$s")
		[ -n "$id" ] || fail "no container for $s"
		state=$(docker inspect --format '{{.State.Status}}/{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$id")
		case "$state" in
		running/healthy) ;;
		exited/* | dead/*) fail "$s stopped: $state" ;;
		*) pending="$pending $s($state)" ;;
		esac
	done
	[ -z "$pending" ] && break
	[ $SECONDS -lt $deadline ] || fail "still not healthy after 180 s:$pending"
	sleep 2
done
compose ps

api=http://127.0.0.1:8080

say "GET /api/products"
products=$(curl -fsS --max-time 5 "$api/api/products") || fail "GET /api/products"
echo "$products" | head -c 400
echo

say "POST /api/checkout with an Idempotency-Key"
key="\"smoke-$(date +%s)-$$\""
body='{"customer":"ana","items":[{"sku":"tea-sencha","qty":2}],"address":"1 Main St"}'
checkout() {
	curl -sS --max-time 10 -o /tmp/compose-smoke.body -D /tmp/compose-smoke.head -w '%{http_code}' \
		-X POST "$api/api/checkout" -H 'Content-Type: application/json' \
		-H 'X-Deadline-Ms: 2000' -H "Idempotency-Key: $key" -d "$body"
}
code=$(checkout)
cat /tmp/compose-smoke.body
echo
[ "$code" = 201 ] || fail "checkout answered $code, want 201"
location=$(tr -d '\r' </tmp/compose-smoke.head | sed -n 's/^[Ll]ocation: //p')
echo "201 Created, Location: $location"

say "the same checkout again: replayed, not charged twice"
first=$(cat /tmp/compose-smoke.body)
code=$(checkout)
[ "$code" = 201 ] || fail "replay answered $code, want 201"
[ "$(cat /tmp/compose-smoke.body)" = "$first" ] || fail "replay answered another body: $(cat /tmp/compose-smoke.body)"
echo "201, same body"

say "GET $location"
curl -fsS --max-time 5 "$api$location" || fail "GET $location"
echo

say "switching the shop to naive through the gateway's admin API (it fans out to every service)"
compose run --rm --no-deps lab mode naive --admin http://gateway:9080
shown=$(compose run --rm --no-deps lab mode --admin http://gateway:9080 | tr -d '\r')
echo "$shown" | grep -q naive || fail "the gateway still reports: $shown"
compose run --rm --no-deps lab mode budgeted --admin http://gateway:9080

if $lab; then
	say "the load test: $COMPOSE run --rm lab"
	compose run --rm lab
fi

say "PASS"
