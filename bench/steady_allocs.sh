#!/usr/bin/env bash
# Steady-state heap allocations per event of each Nexmark query, as issue 14 defines them: the
# marginal allocations between a 1M-event and a 3M-event run, (3M * a3 - 1M * a1) / 2M, where a1
# and a3 are the runs' `allocs_per_event=` (every allocation of the run over its events, the
# warm-up included: state growing to its working size, pools filling). q0-q3, q5, q7, q8, q11,
# q12 with the discard sink (their row counts checked against DuckDB's), q4 with the topic sink
# (every row checked). A run that fails, or a build that counts no allocations (sanitizers),
# stops the script. The bench prints two decimals, so the marginal is good to about 0.01. Not
# part of the tests.
#
#   bench/steady_allocs.sh build/src/cli/weir [q4 q5 ...]
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
weir=$1
shift
queries=("$@")
[ ${#queries[@]} -gt 0 ] || queries=(q0 q1 q2 q3 q4 q5 q7 q8 q11 q12)

allocs() {  # QUERY EVENTS: allocs_per_event of one verified run
  local sink=(--sink discard)
  [ "$1" = q4 ] && sink=()
  local line figure
  line=$("$weir" bench nexmark --query "$1" --events "$2" "${sink[@]}" | grep '^nexmark ')
  figure=$(sed -n 's/.*allocs_per_event=\([0-9][0-9.]*\).*/\1/p' <<<"$line")
  if [ -z "$figure" ]; then
    echo "$1 with $2 events: no allocation count in: $line" >&2
    exit 1
  fi
  echo "$figure"
}

printf '%-5s %14s %14s %12s\n' query "1M run" "3M run" marginal
for q in "${queries[@]}"; do
  a1=$(allocs "$q" 1000000)
  a3=$(allocs "$q" 3000000)
  awk -v q="$q" -v a1="$a1" -v a3="$a3" \
    'BEGIN { printf "%-5s %14s %14s %12.2f\n", q, a1, a3, (3 * a3 - a1) / 2 }'
done
