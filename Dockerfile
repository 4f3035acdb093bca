# syntax=docker/dockerfile:1
# The foreman binary in a minimal image: a static build (CGO_ENABLED=0;
# the SQLite journal is modernc.org/sqlite, pure Go) on distroless/static,
# which has CA certificates, /etc/passwd's nonroot user and nothing else.
# .ci/run builds the binary with the same command and checks it is static
# and runs as that uid (step "image: static binary, non-root").
#
#   docker build -t foreman:dev .
#   docker run --rm foreman:dev --help
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/foreman ./cmd/foreman

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/foreman /usr/local/bin/foreman
# 65532 is distroless' nonroot; the chart runs as it too.
USER 65532:65532
# Remote (backend 2551, frontend 3000, worker 4000), membership (port+4000:
# 6551), the frontend's HTTP API (8080 in the chart) and --metrics (9100,
# with /livez and /readyz).
EXPOSE 2551 3000 4000 6551 8080 9100
ENTRYPOINT ["/usr/local/bin/foreman"]
