#!/usr/bin/env bash
# Regenerates the Go code for every .proto file in this directory.
# Generator versions are pinned: protoc-gen-go by the tool directive in go.mod,
# protoc by Debian's protobuf-compiler package (3.21.12 on bookworm).
# Run from anywhere: go generate ./messages
set -euo pipefail
cd "$(dirname "$0")"
command -v protoc >/dev/null || { echo "gen.sh: protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
protoc -I . --plugin=protoc-gen-go="$bin/protoc-gen-go" \
  --go_out=. --go_opt=paths=source_relative ./*.proto
