#!/usr/bin/env bash
# A JSON topic through a filter into another topic, with `weir run`: the path on which a value
# no step changed is written as the text it was read from (src/dataflow/README.md,
# UnchangedInput). Makes a topic of EVENTS Nexmark events as JSON once, then runs the pipeline
# `source: {topic: events} -> filter: {field: type, eq: bid} -> sink: {topic: bids}` with NEW and
# OLD in turn (A B A B ...), RUNS times each, each run from a fresh output and pipeline state,
# and prints every run's user and system CPU seconds, then each binary's medians and events/s
# per core (user + system). Not part of the tests.
#
#   bench/filter_topic.sh NEW OLD [RUNS] [EVENTS]
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
new=$1 old=$2 runs=${3:-5} events=${4:-2000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/make.yaml" <<YAML
source: {nexmark: {partitions: 2, events: $events, real_time: false, seed: 3}}
steps: []
sink: {topic: events}
YAML
cat >"$work/filter.yaml" <<'YAML'
source: {topic: events, bounded: true}
steps:
  - filter: {field: type, eq: bid}
sink: {topic: bids}
YAML
"$new" run "$work/make.yaml" --data-dir "$work/data" -q --listen off >/dev/null 2>&1

TIMEFORMAT='%U %S'
: >"$work/times"
for ((i = 1; i <= runs; i++)); do
  for side in new old; do
    rm -rf "$work/data/log/bids" "$work/data/log/filter.dlq" "$work/data/apps/filter"
    binary=$new
    [ "$side" = old ] && binary=$old
    t=$({ time "$binary" run "$work/filter.yaml" --data-dir "$work/data" -q --listen off \
      >/dev/null; } 2>&1 | tail -1)
    echo "$i $side user/sys s: $t"
    echo "$side $t" >>"$work/times"
  done
done
for side in new old; do
  awk -v side="$side" -v events="$events" 'BEGIN { n = 0 }
    $1 == side { u[n] = $2; c[n] = $2 + $3; n++ }
    function median(a, n,   i, j, t) {
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
    }
    END { mu = median(u, n); mc = median(c, n)
          printf "%s: median user %.2f s, user + system %.2f s, %.0f events/s per core\n", side, mu, mc, events / mc }' "$work/times"
done
