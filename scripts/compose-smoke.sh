#!/usr/bin/env bash
# Runs the compose stack for real on this machine's Docker engine and checks
# it from the outside: build the image, start PostgreSQL, the five
# services and nginx in front of the gateway, wait until they are healthy
# and nginx answers, browse (through nginx), check out (201, then the
# same Idempotency-Key replayed), switch the mode through the gateway's
# admin API and read the mode back from every service, check out again in
# the new mode, slow the wire between orders and payments through the
# netproxy and see it in a checkout's Server-Timing, clear it, optionally
# run the load test, and tear everything down
# (also when a step fails or the script is interrupted). From this machine
# it talks to 127.0.0.1:8080 only; the admin calls run inside the gateway's
# container, on the compose network.
#
# Usage: scripts/compose-smoke.sh [--stand-ins] [--lab] [--keep]
#   --stand-ins  first run scripts/base-images.sh, for a machine that cannot
#                pull images: it builds local stand-ins for the base images
#                that are missing or out of date, and reuses the others
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
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "compose-smoke: unknown argument $arg (try --help)" >&2
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
# The project name comes from .env; the stack always starts in its
# default mode, and without an admin token, whatever the shell says. It
# runs this checkout: the image is built from source as mercado:dev, never
# pulled, and never tagged as the released image (docker-compose.yml's
# default, docs/deploy.md, Releases).
export MERCADO_MODE=budgeted MERCADO_ADMIN_TOKEN= MERCADO_IMAGE=mercado:dev
compose() { $COMPOSE "$@"; }
say() { printf '\ncompose-smoke: [%3ds] %s\n' "$SECONDS" "$*"; }
fail() {
	printf 'compose-smoke: FAIL: %s\n' "$*" >&2
	exit 1
}

# The services, with their admin ports (docker-compose.yml; the port table
# in docs/deploy.md).
admin_ports="gateway=9080 orders=9081 catalog=9082 payments=9083 shipping=9084"
base_images="golang:1.26-bookworm postgres:15-bookworm nginx:1.22.1"

started=false
teardown() {
	local rc=$?
	trap - EXIT
	if [ $rc -ne 0 ] && $started; then
		say "the services' last logs"
		compose logs --no-color --tail=30 || true
	fi
	if $keep && [ $rc -eq 0 ]; then
		say "left running; tear down with: $COMPOSE down -v"
	elif $started; then
		say "tearing down"
		if compose --profile lab down -v --remove-orphans; then
			left=$(docker ps -aq --filter label=com.docker.compose.project=mercado)
			[ -z "$left" ] && echo "torn down: no container of the project is left" ||
				echo "containers still there: $left"
		fi
	fi
	if [ $rc -eq 0 ]; then
		say "PASS in ${SECONDS}s"
	else
		printf '\ncompose-smoke: FAILED (exit %d) after %ds\n' "$rc" "$SECONDS" >&2
	fi
	exit $rc
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "using $COMPOSE ($(compose version --short 2>/dev/null || compose version | head -1)), engine $(docker version --format '{{.Server.Version}}')"

if $stand_ins; then
	say "local stand-ins for the base images (scripts/base-images.sh: builds what is missing or out of date, reuses the rest)"
	scripts/base-images.sh
fi
# Say plainly which base images are the real ones and which are stand-ins.
for image in $base_images; do
	if ! docker image inspect "$image" >/dev/null 2>&1; then
		echo "base image $image: not on this engine; the build pulls it (on a machine that cannot pull, use --stand-ins)"
	elif [ "$(docker image inspect --format '{{ index .Config.Labels "org.mercado.stand-in" }}' "$image")" = true ]; then
		echo "base image $image: a LOCAL STAND-IN built by scripts/base-images.sh from Debian packages, not the official image"
	else
		echo "base image $image: as pulled"
	fi
done

say "clearing what an interrupted run may have left"
compose --profile lab down -v --remove-orphans >/dev/null 2>&1 || true
started=true

say "building the image (layers are reused while go.mod, go.sum and the sources are unchanged)"
compose build gateway

say "starting PostgreSQL, the five services and the wire (netproxy)"
compose up -d

say "waiting until every service is healthy"
services="postgres netproxy catalog payments shipping orders gateway"
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
echo "stack healthy: $services"

api=http://127.0.0.1:8080

say "waiting until nginx, in front of the gateway, answers on $api"
deadline=$((SECONDS + 60))
until curl -fsS --max-time 2 -o /dev/null "$api/api/products" 2>/dev/null; do
	id=$(compose ps -q nginx)
	[ -n "$id" ] || fail "no container for nginx"
	state=$(docker inspect --format '{{.State.Status}}' "$id")
	[ "$state" = running ] || fail "nginx stopped: $state"
	[ $SECONDS -lt $deadline ] || fail "nginx does not answer on $api after 60 s"
	sleep 1
done
server=$(curl -fsS --max-time 5 -o /dev/null -D - "$api/api/products" | tr -d '\r' | sed -n 's/^[Ss]erver: //p')
[ "$server" = nginx ] || fail "$api answered with Server: \"$server\", want nginx (in front of the gateway)"
echo "nginx answers (Server: $server), passing to the gateway"

say "GET /api/products"
products=$(curl -fsS --max-time 5 "$api/api/products") || fail "GET /api/products"
echo "$products" | head -c 400
echo

body='{"customer":"ana","items":[{"sku":"tea-sencha","qty":2}],"address":"1 Main St"}'
# checkout KEY: POST /api/checkout; prints the status, keeps the body.
checkout() {
	curl -sS --max-time 10 -o /tmp/compose-smoke.body -D /tmp/compose-smoke.head -w '%{http_code}' \
		-X POST "$api/api/checkout" -H 'Content-Type: application/json' \
		-H 'X-Deadline-Ms: 2000' -H "Idempotency-Key: $1" -d "$body"
}

say "POST /api/checkout with an Idempotency-Key"
key="\"smoke-$(date +%s)-$$\""
code=$(checkout "$key")
cat /tmp/compose-smoke.body
echo
[ "$code" = 201 ] || fail "checkout answered $code, want 201"
location=$(tr -d '\r' </tmp/compose-smoke.head | sed -n 's/^[Ll]ocation: //p')
echo "checkout: 201 Created, Location: $location"

say "the same checkout again: replayed, not charged twice"
first=$(cat /tmp/compose-smoke.body)
code=$(checkout "$key")
[ "$code" = 201 ] || fail "replay answered $code, want 201"
[ "$(cat /tmp/compose-smoke.body)" = "$first" ] || fail "replay answered another body: $(cat /tmp/compose-smoke.body)"
echo "replay: 201, same body"

say "GET $location"
curl -fsS --max-time 5 "$api$location" || fail "GET $location"
echo

# mercado runs the binary in the gateway's container (the image has no
# shell), on the compose network where the admin ports are.
mercado() { compose exec -T gateway /mercado "$@"; }

# expect_mode MODE: every service reports MODE on its own admin API.
expect_mode() {
	local want=$1 pair name port host line
	for pair in $admin_ports; do
		name=${pair%=*} port=${pair#*=}
		host=$name
		[ "$name" = gateway ] && host=127.0.0.1
		line=$(mercado mode --admin "http://$host:$port" | tr -d '\r')
		echo "$line"
		case "$line" in
		"$name "*" $want "*) ;;
		*) fail "$name reports \"$line\", want mode $want" ;;
		esac
	done
}

say "switching the shop to naive through the gateway's admin API (it fans out to every service)"
mercado mode naive --admin http://127.0.0.1:9080
say "each service's own admin API reports naive"
expect_mode naive
say "a checkout in naive mode"
code=$(checkout "\"smoke-naive-$(date +%s)-$$\"")
[ "$code" = 201 ] || fail "checkout in naive mode answered $code, want 201"
echo "checkout in naive mode: 201"

say "and back to budgeted"
mercado mode budgeted --admin http://127.0.0.1:9080
expect_mode budgeted
echo "mode switched: naive on all five, then budgeted on all five"

# payments_ms: the payments hop's time in the last checkout's
# Server-Timing, whole milliseconds.
payments_ms() {
	tr -d '\r' </tmp/compose-smoke.head | sed -n 's/^[Ss]erver-[Tt]iming: //p' | tr ',' '\n' |
		sed -n 's/^ *payments;.*dur=\([0-9]*\).*/\1/p' | head -1
}

say "a network fault on the wire: the answers from payments to orders 150 ms late (netproxy; under the fraud screen's 300 ms cap, which shares the link)"
mercado fault --network orders-payments latency=150ms --admin http://netproxy:9085
code=$(checkout "\"smoke-wire-$(date +%s)-$$\"")
slow=$(payments_ms)
echo "checkout with the wire slow: $code, payments hop ${slow:-?} ms"
[ "$code" = 201 ] || fail "checkout with orders-payments 150 ms late answered $code, want 201"
[ "${slow:-0}" -ge 150 ] || fail "the payments hop took ${slow:-?} ms with the wire 150 ms late, want at least 150"
mercado fault --network orders-payments --clear --admin http://netproxy:9085
code=$(checkout "\"smoke-wire-clear-$(date +%s)-$$\"")
fast=$(payments_ms)
echo "checkout with the wire cleared: $code, payments hop ${fast:-?} ms"
[ "$code" = 201 ] || fail "checkout after clearing the network fault answered $code, want 201"
[ "${fast:-150}" -lt 150 ] || fail "the payments hop still took ${fast:-?} ms after the network fault was cleared"

if $lab; then
	say "the load test: $COMPOSE run --rm lab"
	compose run --rm lab
fi
