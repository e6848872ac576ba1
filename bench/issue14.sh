#!/usr/bin/env bash
# Issue 14's before/after tables (BENCHMARKS.md, "Records without a heap allocation per event"):
# every workload of the issue's target table, run with the new weir and a build of the commit
# before the issue (OLD) in turn, 3 pairs each, through bench/compare.sh. Not part of the tests.
#
#   OLD=path/to/old/weir bench/issue14.sh [NEW_WEIR] > results.txt
# An old build: git worktree add /tmp/weir-old 5d1fc1e && (cd /tmp/weir-old && ./dev build)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
new=${1:-build/src/cli/weir}
old=${OLD:?OLD=path of the weir built before issue 14}
runs=${RUNS:-3}
events=${EVENTS:-1000000}
run() {
  echo "## weir $*"
  bench/compare.sh "$new" "$old" "$runs" "$@" || echo "(failed)"
  echo
}
for q in q0 q1 q2 q3 q4 q5 q7 q8 q11 q12; do
  run bench nexmark --query "$q" --events "$events"
done
# The engine without its output log: the new binary alone (the discard sink is newer than OLD).
for q in q0 q1 q2 q5 q11 q12; do
  echo "## weir bench nexmark --query $q --events $events --sink discard"
  bench/compare.sh "$new" "$new" "$runs" bench nexmark --query "$q" --events "$events" \
    --sink discard || echo "(failed)"
  echo
done
run bench pipeline --events 4000000 --keys uniform
run bench windows --window tumbling --keys uniform --users 100000 --events 3000000 --closing key
run bench windows --window hopping --keys uniform --users 100000 --events 1000000 --closing key
run bench windows --window session --keys sessions --users 1000000 --events 8000000 --closing key
run bench join --join time --events 4000000
run bench join --join interval --events 2000000 --keys 10000
