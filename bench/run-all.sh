#!/usr/bin/env bash
# Runs every benchmark of BENCHMARKS.md on this machine, REPEAT times each (default 3), and
# prints the machine and each run's figures, then the Nexmark queries once (bench/nexmark/run.sh,
# which also draws bench/nexmark/nexmark.png). Builds first. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT="${REPEAT:-3}"
./dev build >/dev/null
weir=build/src/cli/weir

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
for i in $(seq "$REPEAT"); do
  echo; echo "== run $i"
  $weir bench log --records 5000000
  $weir bench pipeline --events 4000000 --keys uniform
  $weir bench pipeline --events 4000000 --keys sessions
  for users in 100000 1000000; do for closing in key partition; do
    $weir bench windows --window session --events 8000000 --users $users --closing $closing
  done; done
  for users in 1000 10000 100000; do for window in tumbling hopping; do
    $weir bench windows --window $window --keys uniform --events 4000000 --users $users
  done; done
  $weir bench join --join time --events 4000000
  $weir bench join --join interval --events 2000000 --keys 10000
  $weir bench join --join pending --events 1000000
done
echo; echo "== expiry cost as stored windows grow (one open window per key)"
for users in 10000 100000 1000000; do for closing in key partition; do
  $weir bench windows --window tumbling --keys uniform --users $users --events $((users * 30)) \
    --closing $closing
done; done
echo; echo "== segment files vs RocksDB as the log's backend (Google Benchmark)"
ninja -C build log_benchmark >/dev/null
build/src/log/log_benchmark --benchmark_min_time=0.5
echo; echo "== Nexmark queries, each verified against DuckDB, beside Flink 1.13's published figures"
# Once, not REPEAT times: ten queries at 10M events plus a fixed-rate run each take a while.
# Last, so that a query failing verification (the script exits 1) hides no other figure.
WEIR=$weir bench/nexmark/run.sh
