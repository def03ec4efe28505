#!/usr/bin/env bash
# Checks the release offline (docs/deploy.md, Releases): everything a
# pushed tag would do except publishing.
#
#   1. the release workflow (.github/workflows/release.yml) passes
#      actionlint, with shellcheck on its run: steps when shellcheck is
#      installed; and it runs the GoReleaser version pinned here
#   2. .goreleaser.yaml passes `goreleaser check`
#   3. a snapshot (`goreleaser release --snapshot --clean`, nothing
#      published) builds the six binaries, linux, darwin and windows on
#      amd64 and arm64, each static and -trimpath with its version in it,
#      packs them into six archives with the README, and writes
#      checksums.txt, all in dist/
#   4. Dockerfile.release builds the image from the snapshot's binaries
#      (FROM scratch: nothing to pull), for linux/amd64 and linux/arm64;
#      the amd64 one runs, as user 65532, with a world-writable /tmp.
#      Where `docker buildx` is installed, GoReleaser's own image step
#      (dockers_v2) runs in the snapshot too
#
# Usage: scripts/release-check.sh [--no-image]
#   --no-image  skip step 4 (it needs a Docker engine; without one it is
#               skipped anyway, and says so)
#
# The tools come from the Go module proxy: actionlint is pinned in
# tools/go.mod; GoReleaser, whose dependencies cannot share that module
# with actionlint's, is pinned below and run with `go run`. The first run
# on a machine compiles GoReleaser (several minutes on 2 cores); later runs
# take it from Go's build cache.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# The GoReleaser the release runs: the workflow's `version:` must say the
# same (checked below).
GORELEASER=github.com/goreleaser/goreleaser/v2@v2.17.0

image=true
for arg in "$@"; do
	case "$arg" in
	--no-image) image=false ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "release-check: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

say() { printf '\nrelease-check: [%3ds] %s\n' "$SECONDS" "$*"; }
fail() {
	printf 'release-check: FAIL: %s\n' "$*" >&2
	exit 1
}
goreleaser() { go run "$GORELEASER" "$@"; }

bin=$(mktemp -d)
built_images=()
cleanup() {
	local rc=$?
	rm -rf "$bin"
	if [ "${#built_images[@]}" -gt 0 ]; then
		docker image rm "${built_images[@]}" >/dev/null 2>&1 || true
	fi
	if [ $rc -eq 0 ]; then
		say "PASS in ${SECONDS}s"
	else
		printf '\nrelease-check: FAILED (exit %d) after %ds\n' "$rc" "$SECONDS" >&2
	fi
}
trap cleanup EXIT

say "the release workflow: actionlint (pinned in tools/go.mod)"
(cd tools && go build -o "$bin/" github.com/rhysd/actionlint/cmd/actionlint)
if command -v shellcheck >/dev/null; then
	echo "shellcheck $(shellcheck --version | sed -n 's/^version: //p') checks its run: steps"
else
	echo "shellcheck is not installed: actionlint checks the workflow without its run: steps (apt-get install shellcheck)"
fi
"$bin/actionlint" -version | head -1
"$bin/actionlint" .github/workflows/*.yml
echo "actionlint: no problem in" .github/workflows/*.yml
pinned=${GORELEASER##*@}
in_workflow=$(sed -n 's/^ *version: *\(v[0-9][0-9.]*\) *$/\1/p' .github/workflows/release.yml)
[ "$in_workflow" = "$pinned" ] ||
	fail "the workflow runs GoReleaser ${in_workflow:-(no version: line)}, this script $pinned: pin the same in both"
echo "the workflow and this script both run GoReleaser $pinned"

say "goreleaser check ($GORELEASER; the first run compiles it)"
goreleaser --version | grep -E '^GitVersion:'
goreleaser check

# GoReleaser reads the git remote's URL before the commit, and in a
# snapshot it drops every git field (the commit, the version) when there
# is none: a checkout with no remote lends it the repository's URL, in
# this process's environment only.
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
		GIT_CONFIG_VALUE_0=https://github.com/mercado-lab/mercado.git
fi

skip=docker
if $image && docker info >/dev/null 2>&1 && docker buildx version >/dev/null 2>&1; then
	skip=""
	echo "docker buildx is installed: the snapshot runs GoReleaser's image step (dockers_v2) too"
fi
say "a snapshot: goreleaser release --snapshot --clean${skip:+ --skip=$skip} (into dist/)"
gr_images=""
if [ -z "$skip" ]; then
	# The images it loads, removed at the end: the tags of .goreleaser.yaml
	# with the platform after them (ghcr.io/mercado-lab/mercado:v1.2.3-amd64).
	gr_tag=$(git describe --tags --abbrev=0 2>/dev/null || echo v0.0.0)
	gr_images="ghcr.io/mercado-lab/mercado:$gr_tag-amd64 ghcr.io/mercado-lab/mercado:$gr_tag-arm64"
	gr_images="$gr_images ghcr.io/mercado-lab/mercado:latest-amd64 ghcr.io/mercado-lab/mercado:latest-arm64"
	read -ra more <<<"$gr_images"
	built_images+=("${more[@]}")
fi
goreleaser release --snapshot --clean ${skip:+--skip=$skip}

say "the six binaries"
# The version the binaries were given (-X main.version): GoReleaser's
# .Summary, `git describe --tags --always --dirty`. (Go leaves -ldflags
# out of the build information of a -trimpath build: the linux/amd64
# binary says it, and each binary holds the string.)
version=$(dist/mercado_linux_amd64_v1/mercado version | awk '{print $NF}')
case "$version" in
"" | none | devel | *"("*) fail "dist/mercado_linux_amd64_v1/mercado version says \"$version\": built without -X main.version (git describe says $(git describe --always --dirty --tags))" ;;
esac
for platform in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64; do
	exe=mercado
	[ "${platform%_*}" = windows ] && exe=mercado.exe
	path=$(find dist -path "dist/mercado_${platform}*/$exe" | head -1)
	[ -n "$path" ] || fail "no binary for $platform in dist/"
	kind=$(file -b "$path")
	case "$platform:$kind" in
	linux_*:*ELF*statically\ linked* | darwin_*:Mach-O* | windows_*:PE32+*) ;;
	*) fail "$path: $kind" ;;
	esac
	settings=$(go version -m "$path")
	for want in 'CGO_ENABLED=0' '-trimpath=true'; do
		grep -qF -- "$want" <<<"$settings" || fail "$path was built without $want: $(grep -E '^\s+build\s' <<<"$settings" | tr '\n' ' ')"
	done
	grep -qaF -- "$version" "$path" || fail "$path does not hold its version $version"
	printf '%-40s %3s MB  %s\n' "$path" "$(($(stat -c %s "$path") / 1048576))" "${kind%%,*}$(grep -q 'statically linked' <<<"$kind" && echo ', statically linked')"
done
echo "six binaries: static, -trimpath, CGO_ENABLED=0, version $version"
echo "dist/mercado_linux_amd64_v1/mercado version: $(dist/mercado_linux_amd64_v1/mercado version)"

say "the archives and checksums.txt"
archives=$(find dist -maxdepth 1 \( -name 'mercado_*.tar.gz' -o -name 'mercado_*.zip' \) -printf '%f\n' | sort)
[ "$(wc -w <<<"$archives")" = 6 ] || fail "want six archives in dist/, got: $archives"
for archive in $archives; do
	case "$archive" in
	*.zip) contents=$(unzip -Z1 "dist/$archive") ;;
	*) contents=$(tar -tzf "dist/$archive") ;;
	esac
	for want in README.md "$(case $archive in *windows*) echo mercado.exe ;; *) echo mercado ;; esac)"; do
		grep -qx "$want" <<<"$contents" || fail "$archive holds no $want: $(tr '\n' ' ' <<<"$contents")"
	done
	echo "$archive: $(tr '\n' ' ' <<<"$contents")"
done
(cd dist && sha256sum --quiet -c checksums.txt) || fail "dist/checksums.txt does not match the archives"
[ "$(wc -l <dist/checksums.txt)" = 6 ] || fail "dist/checksums.txt lists $(wc -l <dist/checksums.txt) files, want the six archives"
echo "checksums.txt: the six archives, sha256, all match"

if ! $image; then
	say "the image: skipped (--no-image)"
	exit 0
fi
if ! docker info >/dev/null 2>&1; then
	say "the image: skipped, no Docker engine is reachable (docker info failed)"
	exit 0
fi

# check_image IMAGE ARCH: the image is Dockerfile.release's for linux/ARCH;
# the amd64 one also runs, and shows its files.
check_image() {
	local img=$1 arch=$2 got want id files
	got=$(docker image inspect --format '{{.Os}}/{{.Architecture}} user {{.Config.User}} entrypoint {{json .Config.Entrypoint}} cmd {{json .Config.Cmd}}' "$img")
	want="linux/$arch user 65532:65532 entrypoint [\"/mercado\"] cmd [\"help\"]"
	[ "$got" = "$want" ] || fail "$img: $got, want $want"
	echo "$img: $got, $(($(docker image inspect --format '{{.Size}}' "$img") / 1048576)) MB"
	[ "$arch" = amd64 ] || return 0
	got=$(docker run --rm --network none "$img" version)
	grep -qF -- "$version" <<<"$got" || fail "docker run $img version printed \"$got\", want $version"
	echo "  docker run --rm $img version: $got"
	id=$(docker create "$img")
	files=$(docker export "$id" | tar --numeric-owner -tvf - | awk '{print $1, $2, $6}')
	docker rm "$id" >/dev/null
	grep -qx 'drwxrwxrwt 0/0 tmp/' <<<"$files" || fail "$img: /tmp is not world-writable and sticky: $files"
	grep -qx -- '-rwxr-xr-x 0/0 mercado' <<<"$files" || fail "$img: /mercado is not an executable of root's: $files"
	echo "  its files: $(grep -E ' (mercado|tmp/)$' <<<"$files" | tr '\n' ' ')(/tmp world-writable and sticky, as the Dockerfile's)"
}

if [ -n "$gr_images" ]; then
	say "the images GoReleaser built with docker buildx (dockers_v2; a snapshot loads one per platform)"
	for arch in amd64 arm64; do
		img="ghcr.io/mercado-lab/mercado:$gr_tag-$arch"
		check_image "$img" "$arch"
		source=$(docker image inspect --format '{{index .Config.Labels "org.opencontainers.image.source"}}' "$img")
		[ "$source" = https://github.com/mercado-lab/mercado ] ||
			fail "$img: label org.opencontainers.image.source is \"$source\", want the repository (it links the package to it)"
	done
fi

# The context GoReleaser hands docker buildx: each platform's binary under
# <os>/<arch>/, and rootfs/tmp of mode 1777, which its pre hook makes
# (.goreleaser.yaml). The classic builder does not set TARGETPLATFORM:
# it is given as a build argument. No cache: the classic builder would
# take the amd64 image's layers for arm64's (and then refuse them).
say "the image: Dockerfile.release, from the snapshot's binaries, with the classic builder of $(docker version --format 'Docker {{.Server.Version}}')"
ctx=dist/release-check/image
mkdir -p "$ctx/linux/amd64" "$ctx/linux/arm64" "$ctx/rootfs"
mkdir -m 1777 "$ctx/rootfs/tmp"
cp dist/mercado_linux_amd64_v1/mercado "$ctx/linux/amd64/"
cp dist/mercado_linux_arm64_v8.0/mercado "$ctx/linux/arm64/"
for arch in amd64 arm64; do
	img=mercado:release-check-$arch
	built_images+=("$img")
	if ! out=$(DOCKER_BUILDKIT=0 docker build --no-cache -f Dockerfile.release --platform "linux/$arch" \
		--build-arg "TARGETPLATFORM=linux/$arch" -t "$img" "$ctx" 2>&1); then
		echo "$out"
		fail "docker build of Dockerfile.release for linux/$arch"
	fi
	check_image "$img" "$arch"
done
