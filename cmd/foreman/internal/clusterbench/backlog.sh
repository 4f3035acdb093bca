#!/bin/bash
# backlog.sh BIN LABEL: issue 17 item 4, a backlog of JOBS (default
# 1,000,000) accepted jobs on real processes.
#
#   go build -o /tmp/mem/foreman ./cmd/foreman
#   bash cmd/foreman/internal/clusterbench/backlog.sh /tmp/mem/foreman run1
#
# Starts a backend (BACKEND port, default 2651, --data in a fresh directory
# under OUT, default /tmp/mem) and a frontend (FRONTEND, default 3651; its
# HTTP API on FRONTEND+5000), submits the backlog with `foreman bench --to`
# (batch mode, no worker node), prints the backend's VmRSS and VmHWM, waits
# SETTLE seconds (default 10: the idle snapshot), SIGKILLs the backend and
# times its restart from process start to the `master recovered` log line
# (and the CPU seconds the new backend used by then, a figure a loaded
# machine distorts less than the wall time),
# then starts a worker node (--workers 8 --window 32 --delay 0) and samples
# the backend's VmRSS every second until GET /status reports the master
# reachable with nothing pending or in progress (at most DRAIN_MAX seconds,
# default 300). Stops every process it started, by PID; keeps the logs.
# BACKEND_ARGS adds flags to both backends (e.g. --memory-limit 768MiB).
set -u
BIN=$1; LABEL=$2
JOBS=${JOBS:-1000000}; OUT=${OUT:-/tmp/mem}; SETTLE=${SETTLE:-10}; DRAIN_MAX=${DRAIN_MAX:-300}
BACKEND=${BACKEND:-2651}; FRONTEND=${FRONTEND:-3651}; HTTP=127.0.0.1:$((FRONTEND + 5000))
mkdir -p "$OUT"
DIR=$(mktemp -d "$OUT/run-$LABEL.XXXX")
SEEDS=127.0.0.1:$BACKEND
rss() { awk '/VmRSS|VmHWM/{printf "%s %d MB ", $1, $2/1024}' "/proc/$1/status"; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | cut -c1-6; }

"$BIN" "$BACKEND" --seeds "$SEEDS" --data "$DIR/data" --log-level info ${BACKEND_ARGS:-} >"$DIR/backend.log" 2>&1 &
BP=$!
"$BIN" "$FRONTEND" --seeds "$SEEDS" --produce=false >"$DIR/front.log" 2>&1 &
FP=$!
echo "$LABEL dir=$DIR backend=$BP frontend=$FP"
for _ in $(seq 1 300); do
	curl -sf "http://$HTTP/status" >/dev/null && grep -q 'master recovered' "$DIR/backend.log" && break
	sleep 0.2
done
"$BIN" bench --to "$HTTP" --mode batch --batch 10000 --connections 4 --jobs "$JOBS" --light 0 --results=false >"$DIR/bench.out" 2>&1
grep -E "durable acks|failed" "$DIR/bench.out" | head -3
echo "backlog: $(rss $BP) journal $(du -sm "$DIR/data" | cut -f1) MB"
sleep "$SETTLE"
echo "after ${SETTLE}s: $(rss $BP)"
kill -9 $BP
wait $BP 2>/dev/null
T0=$(now)
"$BIN" "$BACKEND" --seeds "$SEEDS" --data "$DIR/data" --log-level info ${BACKEND_ARGS:-} >"$DIR/backend2.log" 2>&1 &
BP=$!
until grep -q 'master recovered' "$DIR/backend2.log"; do
	sleep 0.01
	kill -0 $BP 2>/dev/null || { echo "backend exited"; break; }
done
echo "restart to master recovered: $(since "$T0") s; backend CPU so far $(awk '{printf "%.1f s", ($14+$15)/100}' "/proc/$BP/stat")"
grep -E 'msg=recovered|master recovered' "$DIR/backend2.log" | head -2 | cut -c1-260
echo "after recovery: $(rss $BP)"
"$BIN" 0 --seeds "$SEEDS" --workers 8 --window 32 --delay 0 >"$DIR/worker.log" 2>&1 &
WP=$!
T0=$(now)
PEAK=0
while true; do
	sleep 1
	r=$(awk '/VmRSS/{print int($2/1024)}' "/proc/$BP/status")
	[ "$r" -gt "$PEAK" ] && PEAK=$r
	s=$(curl -s -m 2 "http://$HTTP/status")
	echo "$(since "$T0") rss=$r $(echo "$s" | grep -o '"queue":{[^}]*}')" >>"$DIR/drain.txt"
	p=$(echo "$s" | grep -o '"pending":[0-9]*' | head -1 | cut -d: -f2)
	ip=$(echo "$s" | grep -o '"in_progress":[0-9]*' | head -1 | cut -d: -f2)
	if echo "$s" | grep -q '"reachable":true' && [ "$p" = "0" ] && [ "$ip" = "0" ]; then break; fi
	if [ "$(echo "$(now) - $T0 > $DRAIN_MAX" | bc)" = 1 ]; then echo "drain: timeout"; break; fi
done
echo "drain: $(since "$T0") s; peak sampled VmRSS $PEAK MB; $(rss $BP); activations $(grep -c 'master recovered' "$DIR/backend2.log")"
kill $WP $FP $BP
wait $WP $FP $BP 2>/dev/null
rm -rf "$DIR/data"
