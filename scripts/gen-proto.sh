#!/usr/bin/env bash
# Regenerates the Go code in proto/ from the .proto contracts.
#
# The code generators (buf, protoc-gen-go, protoc-gen-go-grpc) are pinned in
# tools/go.mod, a module of their own, so they never enter the main module's
# dependency graph. With --check it regenerates into a scratch copy and fails
# when the committed code differs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for tool in github.com/bufbuild/buf/cmd/buf \
  google.golang.org/protobuf/cmd/protoc-gen-go \
  google.golang.org/grpc/cmd/protoc-gen-go-grpc; do
  (cd tools && go build -o "$bin/" "$tool")
done
export PATH="$bin:$PATH"

if [ "${1:-}" = "--check" ]; then
  scratch="$bin/tree"
  mkdir -p "$scratch"
  cp -r buf.yaml buf.gen.yaml proto "$scratch/"
  (cd "$scratch" && find proto -name '*.pb.go' -delete && buf generate)
  if ! diff -r -q proto "$scratch/proto"; then
    echo "generated code in proto/ is stale: run scripts/gen-proto.sh" >&2
    exit 1
  fi
  echo "generated code in proto/ is up to date"
  exit 0
fi

find proto -name '*.pb.go' -delete
buf generate
echo "regenerated proto/"
