#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the journal's tests and prints, on
# stdout, the shell lines that point the tests at it:
#
#   eval "$(bash cluster/journal/ci-postgres.sh)"      # start; exports FOREMAN_TEST_POSTGRES_DSN
#   go test -race ./cluster/journal/...
#   bash cluster/journal/ci-postgres.sh stop            # stop it (uses FOREMAN_TEST_POSTGRES_DIR)
#
# The server listens on 127.0.0.1 only, on a free port, with its data in a
# fresh temporary directory, trust authentication (loopback, throwaway) and
# fsync on. It runs as the user "postgres" when started as root (PostgreSQL
# refuses to run as root), else as the calling user. Debian's postgresql
# package is installed with apt-get when no server binaries are found (root
# needed for that). Everything else goes to stderr.
set -euo pipefail

log() { echo "ci-postgres: $*" >&2; }
die() { log "$*"; exit 1; }

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-}" = stop ]; then
	dir=${2:-${FOREMAN_TEST_POSTGRES_DIR:-}}
	[ -n "$dir" ] && [ -f "$dir/data/postmaster.pid" ] || die "stop: no running server (pass its directory or set FOREMAN_TEST_POSTGRES_DIR)"
	bin=$(find_bin)
	as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2
	rm -rf "$dir"
	log "stopped and removed $dir"
	exit 0
fi

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
	[ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and installing it needs root: apt-get install postgresql"
	log "installing postgresql with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends postgresql >&2
	bin=$(find_bin)
	[ -n "$bin" ] || die "apt-get installed postgresql but no /usr/lib/postgresql/*/bin was found"
fi

if [ "$(id -u)" = 0 ] && ! id -u postgres >/dev/null 2>&1; then
	useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
fi

# free_port FROM: the first TCP port on loopback from FROM up to 54420 that
# nothing answers on.
free_port() {
	local p
	for p in $(seq "$1" 54420); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
	done
	return 1
}

dir=$(mktemp -d /tmp/foreman-pg.XXXXXX)
chmod 0755 "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi

log "initdb in $dir/data ($bin)"
as_owner "$bin/initdb" -D "$dir/data" -U foreman --auth=trust -E UTF8 --no-instructions >&2
# Another server started at the same time (two test packages, or two runs)
# can take the port between the probe and the bind: then the next free port
# is tried, a few times.
port=54319
for attempt in 1 2 3 4 5; do
	port=$(free_port $((port + 1))) || { rm -rf "$dir"; die "no free port in 54320-54420 on 127.0.0.1"; }
	log "starting on 127.0.0.1:$port"
	rm -f "$dir/server.log" # pg_ctl (as the owner) creates it anew
	if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on -c max_connections=200" \
		start >&2; then
		break
	fi
	cat "$dir/server.log" >&2
	if [ "$attempt" = 5 ] || ! grep -q "Address already in use" "$dir/server.log"; then
		rm -rf "$dir" # nothing runs from it: a failed start leaves no directory behind
		die "server did not start (log above)"
	fi
	log "port $port was taken meanwhile; trying another"
done
as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U foreman foreman_test >&2
pid=$(head -n 1 "$dir/data/postmaster.pid")
log "ready: server PID $pid; stop it with: bash $0 stop $dir"

echo "export FOREMAN_TEST_POSTGRES_DSN='postgres://foreman@127.0.0.1:$port/foreman_test?sslmode=disable'"
echo "export FOREMAN_TEST_POSTGRES_DIR='$dir'"
echo "export FOREMAN_TEST_POSTGRES_PID='$pid'"
