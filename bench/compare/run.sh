#!/usr/bin/env bash
# Issue 17's side-by-side run: Foreman beside asynq (Redis) and River
# (PostgreSQL) on this machine, each measured end to end (submitted, durable,
# run by a no-op handler), in ROUNDS interleaved rounds, then a table of
# medians and min-max.
#
#   bash bench/compare/run.sh            # from the repository root; ROUNDS=3
#   ROUNDS=5 bash bench/compare/run.sh
#
# Each round runs, in this order: asynq on Redis with appendfsync everysec,
# asynq with appendfsync always, River Insert one by one, River InsertMany in
# batches, the 3-process Foreman cluster over HTTP (single POST /work, then
# POST /work/batch), Foreman in one process (`foreman bench`), and the disk's
# fsync rate. Each run also prints CPU µs per job per process over its
# measured phase (issue 39): the compare process and its server (redis-server;
# PostgreSQL's postmaster with every backend it forked) from /proc/PID/stat,
# each Foreman node by PID (foreman bench --cpu-of), and the load generator
# from getrusage; a second table gives their medians. Every system-run holds /tmp/bench.lock (flock) for its whole
# length, server start to stop, and releases it between runs, so that others
# measuring on this machine can interleave; nothing this script starts runs
# outside the lock except the builds' outputs lying on disk.
#
# It installs redis-server with apt-get when missing (root), starts its own
# Redis (127.0.0.1:6390, AOF on, no RDB snapshots, a fresh directory per run)
# and, for each River run, a fresh PostgreSQL from cluster/journal/ci-postgres.sh
# (the journal tests' throwaway server: loopback, a free port, fsync and
# synchronous_commit on; it installs Debian's postgresql when missing).
# Foreman uses ports 2750, 3750 and 8750. Every process it starts is stopped by
# its PID, on success or failure, and its directories are removed; the raw
# outputs stay in $OUT (default /tmp/foreman-compare-results, replaced).
#
# Job counts (environment): ASYNQ_JOBS (everysec), ASYNQ_ALWAYS_JOBS,
# RIVER_SINGLE_JOBS, RIVER_MANY_JOBS, RIVER_WORKERS, FOREMAN_SINGLE_JOBS,
# FOREMAN_BATCH_JOBS, FOREMAN_LOCAL_JOBS.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
ASYNQ_JOBS=${ASYNQ_JOBS:-100000}
ASYNQ_ALWAYS_JOBS=${ASYNQ_ALWAYS_JOBS:-40000}
RIVER_SINGLE_JOBS=${RIVER_SINGLE_JOBS:-40000}
RIVER_MANY_JOBS=${RIVER_MANY_JOBS:-200000}
RIVER_WORKERS=${RIVER_WORKERS:-5000}
FOREMAN_SINGLE_JOBS=${FOREMAN_SINGLE_JOBS:-60000}
FOREMAN_BATCH_JOBS=${FOREMAN_BATCH_JOBS:-200000}
FOREMAN_LOCAL_JOBS=${FOREMAN_LOCAL_JOBS:-50000}
LOCK=/tmp/bench.lock
OUT=${OUT:-/tmp/foreman-compare-results}
REDIS_PORT=6390

log() { echo "compare: $*" >&2; }
die() { log "$*"; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/foreman-compare.XXXXXX)
chmod 0755 "$work"
rm -rf "$OUT"
mkdir -p "$OUT"

# PIDs of the processes this script started and has not yet stopped.
pids=()
pgdir= # the running PostgreSQL's directory (ci-postgres.sh), if any

stop_pid() {
	local pid=$1
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || true
	local keep=()
	for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}

ci_postgres=$repo/cluster/journal/ci-postgres.sh

pg_stop() {
	if [ -n "$pgdir" ]; then
		bash "$ci_postgres" stop "$pgdir" >/dev/null 2>&1 || true
		pgdir=
	fi
}

cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do stop_pid "$pid"; done
	pg_stop
	flock -u 9 2>/dev/null || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The lock is taken on fd 9 and released explicitly; processes started while
# it is held get fd 9 closed, so they never keep it.
lock() { exec 9>>"$LOCK"; flock 9; }
unlock() { flock -u 9; exec 9>&-; }

# --- Install and build -------------------------------------------------------

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	[ "$(id -u)" = 0 ] || die "redis-server is missing and installing it needs root: apt-get install redis-server"
	log "installing redis-server with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends redis-server >&2
fi
for port in $REDIS_PORT 2750 3750 8750; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port is in use on 127.0.0.1"; fi
done

log "building (under $LOCK)"
lock
(cd "$repo" && go build -o "$work/foreman" ./cmd/foreman)
(cd "$here" && go build -o "$work/compare" ./cmd/compare)
unlock
FOREMAN=$work/foreman
COMPARE=$work/compare

# --- One system-run each -----------------------------------------------------

# run_asynq ROUND FSYNC JOBS: a fresh Redis with appendfsync FSYNC, the
# measurement, Redis stopped and its directory removed.
run_asynq() {
	local round=$1 fsync=$2 jobs=$3 d=$work/redis-$2-$1
	mkdir -p "$d"
	lock
	redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$d" --appendonly yes --appendfsync "$fsync" \
		--save '' --daemonize no --logfile "$d/redis.log" 9>&- &
	local rpid=$!
	pids+=("$rpid")
	for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
	redis-cli -p "$REDIS_PORT" ping >/dev/null || die "redis did not start (log: $(tail -n 5 "$d/redis.log"))"
	"$COMPARE" asynq --redis "127.0.0.1:$REDIS_PORT" --producers 64 --concurrency 8 --jobs "$jobs" --server-pid "$rpid" \
		>"$OUT/r$round-asynq-$fsync.txt" 9>&-
	stop_pid "$rpid"
	unlock
	rm -rf "$d"
}

# run_river ROUND MODE: a fresh PostgreSQL (ci-postgres.sh: initdb, start, a
# new database), the measurement, PostgreSQL stopped and removed.
run_river() {
	local round=$1 mode=$2 args
	if [ "$mode" = single ]; then
		args=(--mode single --producers 64 --jobs "$RIVER_SINGLE_JOBS")
	else
		args=(--mode many --batch 1000 --producers 4 --jobs "$RIVER_MANY_JOBS")
	fi
	lock
	local env
	env=$(bash "$ci_postgres" 9>&- 2>"$work/pg-start.log") || { cat "$work/pg-start.log" >&2; die "PostgreSQL did not start"; }
	eval "$env"
	pgdir=$FOREMAN_TEST_POSTGRES_DIR
	"$COMPARE" river --dsn "$FOREMAN_TEST_POSTGRES_DSN" --server-pid "$FOREMAN_TEST_POSTGRES_PID" \
		--workers "$RIVER_WORKERS" "${args[@]}" >"$OUT/r$round-river-$mode.txt" 9>&-
	pg_stop
	unlock
}

# run_foreman_cluster ROUND: backend, frontend and worker node, a warm-up, the
# single-job and the batch measurement, then the three stopped.
run_foreman_cluster() {
	local round=$1 d=$work/fc-$1
	mkdir -p "$d"
	lock
	(cd "$d" && exec "$FOREMAN" 2750 --seeds 127.0.0.1:2750 --data "$d/b" --log-level warn 9>&- >"$d/backend.log" 2>&1) &
	local b=$!
	pids+=("$b")
	(cd "$d" && exec "$FOREMAN" 3750 --seeds 127.0.0.1:2750 --http 127.0.0.1:8750 --produce=false --log-level warn 9>&- >"$d/frontend.log" 2>&1) &
	local f=$!
	pids+=("$f")
	(cd "$d" && exec "$FOREMAN" 0 --seeds 127.0.0.1:2750 --workers 4 --window 16 --delay 0 --log-level warn 9>&- >"$d/worker.log" 2>&1) &
	local w=$!
	pids+=("$w")
	local ok=
	for _ in $(seq 300); do
		if curl -sf http://127.0.0.1:8750/status 2>/dev/null | grep -q '"reachable":true'; then ok=1; break; fi
		sleep 0.2
	done
	[ -n "$ok" ] || { tail -n 5 "$d"/*.log >&2; die "the Foreman cluster did not become reachable"; }
	local cpu=(--cpu-of "backend=$b" --cpu-of "frontend=$f" --cpu-of "worker=$w")
	"$FOREMAN" bench --to 127.0.0.1:8750 --jobs 5000 --light 0 >"$OUT/r$round-foreman-warmup.txt" 9>&-
	"$FOREMAN" bench --to 127.0.0.1:8750 --jobs "$FOREMAN_SINGLE_JOBS" --connections 64 --light 300 "${cpu[@]}" \
		>"$OUT/r$round-foreman-single.txt" 9>&-
	"$FOREMAN" bench --to 127.0.0.1:8750 --mode batch --batch 1000 --connections 4 --jobs "$FOREMAN_BATCH_JOBS" --light 0 "${cpu[@]}" \
		>"$OUT/r$round-foreman-batch.txt" 9>&-
	stop_pid "$w"
	stop_pid "$f"
	stop_pid "$b"
	unlock
	rm -rf "$d"
}

# run_foreman_local ROUND: `foreman bench` in one process (its journal in a
# temporary directory it removes), then the disk's fsync rate (4 KiB appends
# in $work, on the same file system as /tmp; a one-job bench follows it).
run_foreman_local() {
	local round=$1
	lock
	"$FOREMAN" bench --jobs "$FOREMAN_LOCAL_JOBS" --submitters 64 --workers 8 --window 16 --light 300 \
		>"$OUT/r$round-foreman-local.txt" 9>&-
	TMPDIR=$work "$FOREMAN" bench --fsync 3s --jobs 1 --light 0 >"$OUT/r$round-fsync.txt" 9>&-
	unlock
}

for round in $(seq "$ROUNDS"); do
	log "round $round of $ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	cut -d' ' -f1-3 /proc/loadavg >"$OUT/r$round-load-start.txt"
	run_asynq "$round" everysec "$ASYNQ_JOBS"
	run_asynq "$round" always "$ASYNQ_ALWAYS_JOBS"
	run_river "$round" single
	run_river "$round" many
	run_foreman_cluster "$round"
	run_foreman_local "$round"
	cut -d' ' -f1-3 /proc/loadavg >"$OUT/r$round-load-end.txt"
done

# --- The table ---------------------------------------------------------------

# figure FILE PATTERN: the number after " = " (Foreman) or after the label
# (compare) on the first line matching PATTERN.
figure() {
	local line
	line=$(grep -m 1 -- "$2" "$1" || true)
	[ -n "$line" ] || { echo NA; return; }
	case $line in
	*" = "*) sed -E 's/.* = ([0-9.]+)[ /].*/\1/' <<<"$line" ;;
	*) sed -E "s|.*$2 ([0-9.]+).*|\\1|" <<<"$line" ;;
	esac
}

# summary LABEL FILE-SUFFIX PATTERN: median (min-max) over the rounds.
summary() {
	local label=$1 suffix=$2 pattern=$3 vals=()
	for round in $(seq "$ROUNDS"); do vals+=("$(figure "$OUT/r$round-$suffix.txt" "$pattern")"); done
	printf '%s\n' "${vals[@]}" | sort -g | awk -v label="$label" -v all="${vals[*]}" '
		{ v[NR] = $1 }
		END {
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "| %s | %.0f | %.0f-%.0f | %s |\n", label, med, v[1], v[NR], all
		}'
}

# cpufig FILE KEY: the µs figure after KEY on the "CPU per job" line.
cpufig() {
	local line
	line=$(grep -m 1 -- "CPU per job" "$1" 2>/dev/null || true)
	[ -n "$line" ] || { echo NA; return; }
	sed -E "s/.*[ :]$2 ([0-9.]+).*/\\1/" <<<"$line"
}

cpusummary() {
	local label=$1 suffix=$2 key=$3 vals=()
	for round in $(seq "$ROUNDS"); do vals+=("$(cpufig "$OUT/r$round-$suffix.txt" "$key")"); done
	printf '%s\n' "${vals[@]}" | sort -g | awk -v label="$label" -v all="${vals[*]}" '
		{ v[NR] = $1 }
		END {
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "| %s | %.1f | %.1f-%.1f | %s |\n", label, med, v[1], v[NR], all
		}'
}

{
	echo "rounds: $ROUNDS; load at round starts: $(cat "$OUT"/r*-load-start.txt | tr '\n' ';')"
	echo
	echo "| figure (jobs/s) | median | min-max | per round |"
	echo "| --- | --- | --- | --- |"
	summary "asynq everysec, 64 producers, concurrency 8: end to end" asynq-everysec "end-to-end jobs/s:"
	summary "asynq everysec: acks" asynq-everysec "acks/s:"
	summary "asynq always, 64 producers, concurrency 8: end to end" asynq-always "end-to-end jobs/s:"
	summary "asynq always: acks" asynq-always "acks/s:"
	summary "River Insert one by one, 64 producers: end to end" river-single "end-to-end jobs/s:"
	summary "River Insert: acks" river-single "acks/s:"
	summary "River InsertMany x1000, 4 producers: end to end" river-many "end-to-end jobs/s:"
	summary "River InsertMany: acks" river-many "acks/s:"
	summary "Foreman cluster, single POST /work, 64 connections: end to end" foreman-single "^end to end:"
	summary "Foreman cluster single: acks" foreman-single "^durable acks:"
	summary "Foreman cluster, batch 1000, 4 connections: end to end" foreman-batch "^end to end:"
	summary "Foreman cluster batch: acks" foreman-batch "^durable acks:"
	summary "Foreman one process, 64 submitters, 8 workers x 16: end to end" foreman-local "^end to end:"
	summary "disk: 4 KiB write+fsync per second" fsync "^fsync in"
	echo
	echo "| CPU per job (µs, measured phase) | median | min-max | per round |"
	echo "| --- | --- | --- | --- |"
	cpusummary "asynq everysec: redis-server" asynq-everysec server
	cpusummary "asynq everysec: client + workers process" asynq-everysec client
	cpusummary "asynq everysec: all" asynq-everysec all
	cpusummary "asynq always: redis-server" asynq-always server
	cpusummary "asynq always: all" asynq-always all
	cpusummary "River Insert: postgres (all its processes)" river-single server
	cpusummary "River Insert: all" river-single all
	cpusummary "River InsertMany: postgres" river-many server
	cpusummary "River InsertMany: all" river-many all
	cpusummary "Foreman single: nodes (backend+frontend+worker)" foreman-single nodes
	cpusummary "Foreman single: load generator" foreman-single load-generator
	cpusummary "Foreman batch: nodes" foreman-batch nodes
	cpusummary "Foreman batch: load generator" foreman-batch load-generator
	cpusummary "Foreman one process (node + submitters)" foreman-local this-process
} | tee "$OUT/table.md"
log "raw outputs and table.md in $OUT"
