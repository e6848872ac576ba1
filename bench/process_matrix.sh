#!/bin/sh
# The process-function benchmark matrix of BENCHMARKS.md ("Keyed process functions"): the six
# workloads in turn, ROUNDS times (interleaved, for medians), then 1M pending timers once.
#   bench/process_matrix.sh [ROUNDS]      (from the repository's root, after ./dev build)
set -e
weir=${WEIR:-build/src/cli/weir}
rounds=${1:-3}
run() { "$weir" bench process "$@" 2>&1 | grep '^process '; }
i=1
while [ "$i" -le "$rounds" ]; do
  echo "== round $i"
  run --events 1000000 --keys 100000
  run --events 1000000 --keys 100000 --idle-ms 3600000 --event-rate 100000
  for handler in native cpp python node; do
    run --handler "$handler" --events 1000000 --keys 10000 --idle-ms 3600000 --event-rate 100000
  done
  i=$((i + 1))
done
echo "== 1M pending timers"
run --events 3000000 --keys 1000000 --idle-ms 36000000 --event-rate 100000 --partitions 1
