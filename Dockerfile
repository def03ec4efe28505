# Mercado's one image: the `mercado` binary, which runs any of the five
# services (`mercado serve gateway|orders|catalog|payments|shipping`), the
# labs and the load test.
#
#   docker build -t mercado:dev --build-arg VERSION=$(git describe --always --dirty) .
#
# Both base images are build arguments. The defaults are the official
# golang image and an empty runtime image; on a machine that cannot pull,
# scripts/base-images.sh builds a local golang:1.26-bookworm stand-in
# (docs/deploy.md). Written for the classic builder as well as BuildKit:
# Debian's docker-compose builds with the classic one.
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=scratch

FROM ${GO_IMAGE} AS build
WORKDIR /src
# A static binary, with no path of this machine in it and no VCS stamp
# (.git stays out of the build context).
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# /out/root is the runtime image's whole file system: the binary and an
# empty /tmp, world-writable and sticky as usual. (COPY of a folder copies
# its contents into a new 0755 folder, so /tmp is copied as an entry of its
# parent to keep its mode; a tmpfs mounted over it takes the same mode.)
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/root/mercado ./cmd/mercado \
 && mkdir -p /out/root/tmp && chmod 1777 /out/root/tmp

# No shell, no libc, no CA certificates (every call stays inside the shop),
# and not root. /tmp is the one writable place, for the load test's report;
# compose and Kubernetes mount a fresh one there.
FROM ${RUNTIME_IMAGE}
COPY --from=build /out/root/ /
USER 65532:65532
# gateway HTTP, then the gRPC ports of orders, catalog, payments and
# shipping, then the admin ports (/healthz, /readyz, /metrics, /admin/*),
# gateway first. Publish only the gateway's 8080.
EXPOSE 8080 8081 8082 8083 8084 9080 9081 9082 9083 9084
ENTRYPOINT ["/mercado"]
CMD ["help"]
