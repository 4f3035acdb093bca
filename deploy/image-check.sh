#!/usr/bin/env bash
# Checks what the Dockerfile's image will run, without Docker (CI has
# none): it runs the Dockerfile's own build command (the `RUN CGO_ENABLED=0
# ... go build` line, read from the file), checks that the binary is
# static, and runs a real job through it as the image's user (USER
# 65532:65532), which owns nothing but the data directory it is given.
set -euo pipefail
cd "$(dirname "$0")/.."

build=$(sed -n 's/^RUN \(CGO_ENABLED=0 .*go build .*\) -o \/out\/foreman \(.*\)$/\1 -o "$out\/foreman" \2/p' Dockerfile)
[ -n "$build" ] || { echo "Dockerfile: no 'RUN CGO_ENABLED=0 ... go build ... -o /out/foreman ./cmd/foreman' line" >&2; exit 1; }
user=$(sed -n 's/^USER \([0-9]*\):\([0-9]*\)$/\1 \2/p' Dockerfile)
[ -n "$user" ] || { echo "Dockerfile: no numeric 'USER uid:gid' line" >&2; exit 1; }
read -r uid gid <<<"$user"
[ "$uid" != 0 ] || { echo "Dockerfile: the image runs as root" >&2; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "build: $build"
eval "$build"
bin="$out/foreman"
# Static: no interpreter, no shared libraries (distroless/static has none).
if ldd "$bin" >/dev/null 2>&1; then
	echo "the image's binary is dynamically linked:" >&2
	ldd "$bin" >&2
	exit 1
fi
go version -m "$bin" | grep -q 'CGO_ENABLED=0' || { echo "the image's binary was not built with CGO_ENABLED=0" >&2; exit 1; }

# A job run as the image's user: 20 jobs through the all-in-one node on
# its SQLite journal (pure Go: modernc.org/sqlite).
mkdir -p "$out/data"
chmod 755 "$out"
chown "$uid:$gid" "$out/data"
got=$(cd "$out/data" && setpriv --reuid "$uid" --regid "$gid" --clear-groups \
	"$bin" --jobs 20 --delay 0 --workers 2 --data "$out/data" --log-level warn)
# The main job ends with its summary's last line (cmd/foreman/summary.go).
[ "$(tail -n 1 <<<"$got")" = "consumed 20 results" ] || { echo "the binary run as uid $uid printed: $got" >&2; exit 1; }
echo "image binary OK: static, $(stat -c %s "$bin") bytes, ran 20 jobs as uid $uid"
