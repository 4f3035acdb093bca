#!/usr/bin/env bash
# CPU per durable job, per process, for Foreman's three paths (issue 39):
# the 3-process cluster on loopback driven over HTTP by `foreman bench --to`
# (single POST /work; with PATHS naming it, grouped: single jobs from as
# many goroutines through the Go client's SubmitGroup; then POST
# /work/batch), and `foreman bench` in one process. Each process's CPU is read from /proc/PID/stat around the measured
# phase (--cpu-of NAME=PID), the load generator's from getrusage.
#
#   bash bench/compare/cpu.sh                     # the tree's foreman, ROUNDS=3
#   bash bench/compare/cpu.sh /tmp/a /tmp/b       # two foreman binaries, A/B
#                                                  # alternated in every round
#
# With two binaries each round runs A then B (the order flips every other
# round), so that both see the same machine; the table gives medians and
# min-max of each path's CPU µs per job per process. Ports: 2760 (backend),
# 3760 (frontend), 3761 (HTTP API). Every process it starts is stopped by its
# PID; raw outputs stay in $OUT (default /tmp/foreman-cpu-results, replaced).
# Environment: ROUNDS, SINGLE_JOBS, BATCH_JOBS, LOCAL_JOBS, CONNECTIONS,
# PATHS (any of: single grouped batch local; default single batch local).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SINGLE_JOBS=${SINGLE_JOBS:-40000}
BATCH_JOBS=${BATCH_JOBS:-200000}
LOCAL_JOBS=${LOCAL_JOBS:-50000}
CONNECTIONS=${CONNECTIONS:-64}
PATHS=${PATHS:-single batch local}
OUT=${OUT:-/tmp/foreman-cpu-results}

log() { echo "cpu: $*" >&2; }
die() { log "$*"; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/foreman-cpu.XXXXXX)
rm -rf "$OUT"
mkdir -p "$OUT"
pids=()

stop_pid() {
	local pid=$1
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || true
	local keep=()
	for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do stop_pid "$pid"; done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bins=("$@")
if [ ${#bins[@]} = 0 ]; then
	(cd "$repo" && go build -o "$work/foreman" ./cmd/foreman)
	bins=("$work/foreman")
fi
for port in 2760 3760 3761; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port is in use on 127.0.0.1"; fi
done

# cluster LABEL ROUND BIN: backend, frontend and worker, a warm-up, the
# single and batch runs with each node's CPU, then the three stopped.
cluster() {
	local label=$1 round=$2 bin=$3 d=$work/c
	rm -rf "$d"
	mkdir -p "$d"
	(cd "$d" && exec "$bin" 2760 --seeds 127.0.0.1:2760 --data "$d/b" --log-level warn >"$d/backend.log" 2>&1) &
	local b=$!
	pids+=("$b")
	(cd "$d" && exec "$bin" 3760 --seeds 127.0.0.1:2760 --http 127.0.0.1:3761 --produce=false --log-level warn >"$d/frontend.log" 2>&1) &
	local f=$!
	pids+=("$f")
	(cd "$d" && exec "$bin" 0 --seeds 127.0.0.1:2760 --workers 4 --window 16 --delay 0 --log-level warn >"$d/worker.log" 2>&1) &
	local w=$!
	pids+=("$w")
	local ok=
	for _ in $(seq 300); do
		if curl -sf http://127.0.0.1:3761/status 2>/dev/null | grep -q '"reachable":true'; then ok=1; break; fi
		sleep 0.2
	done
	[ -n "$ok" ] || { tail -n 5 "$d"/*.log >&2; die "the cluster did not become reachable"; }
	local cpu=(--cpu-of "backend=$b" --cpu-of "frontend=$f" --cpu-of "worker=$w")
	"$bin" bench --to 127.0.0.1:3761 --jobs 5000 --light 0 >/dev/null 2>&1
	case " $PATHS " in *" single "*)
		"$bin" bench --to 127.0.0.1:3761 --jobs "$SINGLE_JOBS" --connections "$CONNECTIONS" --light 0 "${cpu[@]}" \
			>"$OUT/r$round-$label-single.txt" 2>/dev/null ;;
	esac
	case " $PATHS " in *" grouped "*)
		"$bin" bench --to 127.0.0.1:3761 --mode grouped --jobs "$SINGLE_JOBS" --connections "$CONNECTIONS" --light 0 "${cpu[@]}" \
			>"$OUT/r$round-$label-grouped.txt" 2>/dev/null ;;
	esac
	case " $PATHS " in *" batch "*)
		"$bin" bench --to 127.0.0.1:3761 --mode batch --batch 1000 --connections 4 --jobs "$BATCH_JOBS" --light 0 "${cpu[@]}" \
			>"$OUT/r$round-$label-batch.txt" 2>/dev/null ;;
	esac
	stop_pid "$w"
	stop_pid "$f"
	stop_pid "$b"
	rm -rf "$d"
}

local_run() {
	local label=$1 round=$2 bin=$3
	case " $PATHS " in *" local "*)
		TMPDIR=$work "$bin" bench --jobs "$LOCAL_JOBS" --submitters 64 --workers 8 --window 16 --light 0 \
			>"$OUT/r$round-$label-local.txt" 2>/dev/null ;;
	esac
}

labels=()
for i in "${!bins[@]}"; do labels+=("$(printf "%s" "ABCDEFGH" | cut -c$((i + 1)))"); done
for round in $(seq "$ROUNDS"); do
	order=("${!bins[@]}")
	if [ $((round % 2)) = 0 ]; then order=($(printf '%s\n' "${order[@]}" | tac)); fi
	for i in "${order[@]}"; do
		log "round $round, ${labels[$i]} (${bins[$i]}; load $(cut -d' ' -f1-3 /proc/loadavg))"
		cluster "${labels[$i]}" "$round" "${bins[$i]}"
		local_run "${labels[$i]}" "$round" "${bins[$i]}"
	done
done

# value FILE KEY: the µs figure after " KEY " on the CPU line, the jobs/s
# figure for KEY=jobs/s.
value() {
	local f=$1 key=$2
	[ -f "$f" ] || { echo NA; return; }
	if [ "$key" = jobs/s ]; then
		grep -m1 '^end to end' "$f" | sed -E 's/.* = ([0-9.]+) jobs\/s.*/\1/'
	else
		grep -m1 '^CPU per job' "$f" | sed -E "s/.*[ :]$key ([0-9.]+).*/\\1/"
	fi
}
summary() {
	local label=$1 path=$2 key=$3 vals=()
	for round in $(seq "$ROUNDS"); do vals+=("$(value "$OUT/r$round-$label-$path.txt" "$key")"); done
	printf '%s\n' "${vals[@]}" | sort -g | awk -v l="$label $path $key" -v all="${vals[*]}" '
		{ v[NR] = $1 }
		END {
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "| %s | %.1f | %.1f-%.1f | %s |\n", l, med, v[1], v[NR], all
		}'
}
{
	echo "rounds: $ROUNDS; binaries: $(for i in "${!bins[@]}"; do printf '%s=%s ' "${labels[$i]}" "${bins[$i]}"; done)"
	echo
	echo "| binary path figure | median | min-max | per round |"
	echo "| --- | --- | --- | --- |"
	for path in $PATHS; do
		for l in "${labels[@]}"; do
			if [ "$path" = local ]; then keys="this-process jobs/s"; else keys="nodes backend frontend worker load-generator jobs/s"; fi
			for key in $keys; do summary "$l" "$path" "$key"; done
		done
	done
} | tee "$OUT/table.md"
log "raw outputs and table.md in $OUT"
