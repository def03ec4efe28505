#!/usr/bin/env bash
# Builds local stand-ins for the base images that Mercado's Dockerfile and
# docker-compose.yml name, for a machine that cannot pull from a registry.
# A machine that can pull does not need this script: `docker compose up`
# pulls the official images.
#
#   golang:1.26-bookworm     Debian bookworm (mmdebstrap minbase) + this
#                            machine's Go toolchain + the module downloads
#                            go.sum names, so the image builds offline
#   postgres:15-bookworm     Debian bookworm + the postgresql-15 package +
#                            an entry point with the official image's
#                            POSTGRES_USER/POSTGRES_PASSWORD/POSTGRES_DB
#   nginx:1.22.1             Debian bookworm + its nginx package (1.22.1):
#                            the edge in front of the gateway
#   prom/prometheus:v2.42.0  (with --observability) Debian bookworm + the
#                            prometheus package
#
# They carry the official names so that the Dockerfile and the compose
# file need no change, and the label org.mercado.stand-in so that anyone
# can tell them apart:
#
#   docker images --filter label=org.mercado.stand-in
#
# Idempotent: an image that exists is kept, unless it is a stand-in built
# from an older go.sum or Go toolchain (golang only), or --force is given.
# An image with the same name that is not a stand-in (a real one, pulled)
# is never touched. The Debian trees are cached in
# ${XDG_CACHE_HOME:-~/.cache}/mercado/base-images.
#
# Needs: docker, mmdebstrap (installed with apt-get when missing), root (mmdebstrap
# builds the trees as root), Go 1.26 on PATH or in /usr/local/go, and
# Debian's package mirror.
#
# Usage: scripts/base-images.sh [--observability] [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

observability=false
force=false
for arg in "$@"; do
	case "$arg" in
	--observability) observability=true ;;
	--force) force=true ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "base-images: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

readonly suite=bookworm
readonly label=org.mercado.stand-in
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mercado/base-images"
export PATH="$PATH:/usr/local/go/bin"

say() { printf 'base-images: %s\n' "$*"; }
die() { printf 'base-images: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "the Docker engine is not reachable"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# image_exists NAME: whether the engine has an image tagged NAME.
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# stand_in_label NAME KEY: the value of a stand-in's label KEY, or
# "not-a-stand-in" for an image this script did not build.
stand_in_label() {
	local v
	v=$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}|{{ index .Config.Labels \"$2\" }}" "$1")
	if [ "${v%%|*}" != true ]; then
		echo not-a-stand-in
	else
		echo "${v#*|}"
	fi
}

# keep NAME [KEY VALUE]: whether the image NAME can stay as it is.
keep() {
	local name=$1
	image_exists "$name" || return 1
	if [ "$(stand_in_label "$name" "")" = not-a-stand-in ]; then
		say "$name exists and is not a stand-in: kept as it is"
		return 0
	fi
	if $force; then
		return 1
	fi
	if [ $# -eq 3 ] && [ "$(stand_in_label "$name" "$2")" != "$3" ]; then
		say "$name is a stand-in built from another $2: rebuilding"
		return 1
	fi
	say "$name exists (local stand-in): skipped"
	return 0
}

# rootfs NAME PACKAGES...: a Debian tree as a tarball, made once and cached.
rootfs() {
	local name=$1
	shift
	local tar="$cache/$name-$suite.tar"
	if [ -s "$tar" ] && ! $force; then
		echo "$tar"
		return
	fi
	if ! command -v mmdebstrap >/dev/null; then
		# Installed here, as the script already runs as root on Debian.
		command -v apt-get >/dev/null || die "mmdebstrap is not installed, and there is no apt-get to install it with"
		say "installing mmdebstrap (apt-get)" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null ||
			die "could not install mmdebstrap (apt-get install mmdebstrap)"
	fi
	mkdir -p "$cache"
	say "making a Debian $suite tree with mmdebstrap: $name (${*:-minbase only})" >&2
	local include=()
	if [ $# -gt 0 ]; then
		include=(--include="$(
			IFS=,
			echo "$*"
		)")
	fi
	# No documentation, no apt lists, no package cache: smaller images. The
	# hook's $1 is the tree, expanded by mmdebstrap, not here.
	# shellcheck disable=SC2016
	mmdebstrap --variant=minbase --format=tar "${include[@]}" \
		--aptopt='APT::Install-Recommends "false"' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
		"$suite" "$tar.part" >&2
	mv "$tar.part" "$tar"
	echo "$tar"
}

# build NAME DIR [docker build flags...]: builds DIR's Dockerfile with the
# context prepared in $work/NAME, labelled as a stand-in.
build() {
	local name=$1 dir=$2
	shift 2
	cp "$dir"/* "$work/ctx/"
	say "building $name (local stand-in)"
	docker build --label "$label=true" "$@" -t "$name" "$work/ctx"
	rm -rf "$work/ctx"
}

# link SRC DST: a hard link when possible (same file system), else a copy.
link() { [ -e "$2" ] || ln "$1" "$2" 2>/dev/null || cp "$1" "$2"; }

build_golang() {
	local name=golang:1.26-bookworm
	local gover gosum
	gover=$(go env GOVERSION) || die "Go is not installed"
	case "$gover" in
	go1.26*) ;;
	*) die "$name needs Go 1.26 on this machine, found $gover" ;;
	esac
	gosum=$(sha256sum go.sum | cut -c1-16)
	keep "$name" org.mercado.toolchain "$gover-$gosum" && return

	local tar
	tar=$(rootfs go ca-certificates)
	mkdir -p "$work/ctx"
	link "$tar" "$work/ctx/rootfs.tar"
	local goroot
	goroot=$(go env GOROOT)
	cp -al "$goroot" "$work/ctx/go" 2>/dev/null || cp -a "$goroot" "$work/ctx/go"

	# Every module download go.sum names, copied from this machine's module
	# cache (filled first, from the module proxy, if anything is missing).
	say "collecting the modules go.sum names"
	go mod download
	local modcache
	modcache="$(go env GOMODCACHE)/cache/download"
	mkdir -p "$work/ctx/modcache"
	local mod ver esc dir f
	while read -r mod ver _; do
		ver=${ver%/go.mod}
		# The cache escapes capital letters: Azure -> !azure.
		esc=$(printf '%s' "$mod" | sed 's/[A-Z]/!\L&/g')
		dir="$esc/@v"
		mkdir -p "$work/ctx/modcache/$dir"
		for f in "$ver.info" "$ver.mod" "$ver.zip" "$ver.ziphash"; do
			if [ -f "$modcache/$dir/$f" ]; then
				link "$modcache/$dir/$f" "$work/ctx/modcache/$dir/$f"
			fi
		done
	done <go.sum
	build "$name" deploy/images/golang --label "org.mercado.toolchain=$gover-$gosum"
}

build_postgres() {
	local name=postgres:15-bookworm
	keep "$name" && return
	local tar
	tar=$(rootfs postgres postgresql-15)
	mkdir -p "$work/ctx"
	link "$tar" "$work/ctx/rootfs.tar"
	build "$name" deploy/images/postgres
}

build_nginx() {
	local name=nginx:1.22.1
	keep "$name" && return
	local tar
	tar=$(rootfs nginx nginx)
	mkdir -p "$work/ctx"
	link "$tar" "$work/ctx/rootfs.tar"
	build "$name" deploy/images/nginx
}

build_prometheus() {
	local name=prom/prometheus:v2.42.0
	keep "$name" && return
	local tar
	tar=$(rootfs prometheus prometheus)
	mkdir -p "$work/ctx"
	link "$tar" "$work/ctx/rootfs.tar"
	build "$name" deploy/images/prometheus
}

build_golang
build_postgres
build_nginx
if $observability; then
	build_prometheus
	say "jaegertracing/all-in-one and grafana/grafana have no Debian packages: build or pull them elsewhere (docs/deploy.md)"
fi
say "done; the stand-ins on this engine:"
docker images --filter "label=$label" --filter dangling=false --format '  {{.Repository}}:{{.Tag}}  {{.Size}}'
