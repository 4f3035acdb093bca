#!/usr/bin/env bash
# Issue 34 item 6: what carrying Work's fields generically costs the master,
# before (REF, default 03f5da1: main before the change) and after (this
# tree), interleaved: newEntry+toWork per work, and a snapshot of 200,000
# pending works (packedWire, and unmarshal+restore). MEMORY=1 adds
# BenchmarkWorkStateMemory (a million works, about 30 s a run).
#   bash bench/issue34-item6.sh            ROUNDS=7 REF=main MEMORY=1 bash bench/issue34-item6.sh
set -euo pipefail
ref=${REF:-03f5da1}
rounds=${ROUNDS:-5}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git -C "$root" archive "$ref" | tar -x -C "$tmp/base"
# The benchmarks themselves, so that both sides run the same ones.
cp "$root/actors/master/snapshot_bench_test.go" "$tmp/base/actors/master/"
(cd "$tmp/base" && go test -c -o "$tmp/before.test" ./actors/master/)
(cd "$root" && go test -c -o "$tmp/after.test" ./actors/master/)
cd "$root/actors/master" # the package's testdata
for i in $(seq "$rounds"); do
  for v in before after; do
    echo "== $v round $i"
    "$tmp/$v.test" -test.run XXX -test.bench 'EntryRoundTrip' -test.benchtime 1s -test.benchmem | grep Benchmark
    "$tmp/$v.test" -test.run XXX -test.bench 'WorkStateSnapshot/works=200000/legacy=false/(wire|decode)' \
      -test.benchtime 5x -test.benchmem | grep Benchmark
    if [ -n "${MEMORY:-}" ]; then
      "$tmp/$v.test" -test.run XXX -test.bench 'WorkStateMemory' -test.benchtime 1x | grep Benchmark
    fi
  done
done
