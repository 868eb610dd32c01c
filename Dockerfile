# pallasgw container image: a static binary on distroless (CA certificates
# and /etc/passwd included, no shell), running as the non-root user 65532.
#
#   docker build -t pallasgw --build-arg VERSION=$(git describe --tags --always) .
#   docker run -p 8200:8200 -v $PWD/configs/compose:/etc/pallasgw:ro pallasgw
#
# Mount the config as a DIRECTORY at /etc/pallasgw (not a single file): the
# gateway watches the directory, so edits on the host (and Kubernetes
# ConfigMap updates) reload it live. Without a mount it serves the built-in
# quickstart agents.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that code changes do not re-download modules.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/pallasgw ./cmd/pallasgw
# Default config: the quickstart, listening on every interface of the
# container instead of loopback. It must pass validation at build time.
RUN mkdir -p /out/etc/pallasgw \
 && sed 's/^listen: .*/listen: "0.0.0.0:8200"/' configs/quickstart.yaml > /out/etc/pallasgw/pallasgw.yaml \
 && /out/pallasgw validate --config /out/etc/pallasgw/pallasgw.yaml

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="pallasgw" \
      org.opencontainers.image.description="One-port MCP gateway for LLM agents" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/pallasgw/pallasgw"
COPY --from=build /out/pallasgw /usr/local/bin/pallasgw
COPY --from=build --chown=65532:65532 /out/etc/pallasgw /etc/pallasgw
USER 65532:65532
# 8200: the main port (agents, registry, /metrics, /healthz, /readyz).
# Legacy alias ports (agents' `port`, `registry_port`) need their own -p.
EXPOSE 8200
ENTRYPOINT ["/usr/local/bin/pallasgw", "serve", "--config", "/etc/pallasgw/pallasgw.yaml"]
