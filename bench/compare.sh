#!/usr/bin/env bash
# Runs one `weir bench ...` command with two weir binaries in turn (A B A B ...) and prints, for
# each figure the command reports, every run's value, the median of each binary and the median
# of the pair-by-pair ratios A/B. Interleaving keeps the ratio meaningful on a shared machine
# whose speed drifts. Not part of the tests.
#
#   bench/compare.sh NEW_WEIR OLD_WEIR RUNS bench nexmark --query q0 --events 1000000
#
# Figures: from `weir bench nexmark` its machine line (pipeline_events_per_cpu_s, events_per_cpu_s,
# ratio_to_duckdb, pipeline_ratio_to_duckdb, allocs_per_event); from `weir bench process` its
# machine line (activations_per_cpu_s, engine_cpu_s, allocs_per_activation, peak_rss_mib); from `weir bench lake`
# its machine line (rows_per_cpu_s, day_rows_per_cpu_s, bytes_per_row, allocs_per_row, peak_rss_mib,
# query_hour_ms, query_latest_ms, duckdb_parquet_hour_ms); from the other benches their throughput line
# ("N events/s per core" or "N input messages/s per core", "N heap allocations per event"). A run that fails or is not verified
# stops the script (exit 1).
#
# COMPARE_PAUSE_S=N sleeps N seconds before every run. On a VM that hands free memory back to its
# host (virtio-balloon free page reporting), a run started right after another reuses the memory
# the last one freed, and one started after a few idle seconds faults fresh memory in from the
# host: pausing 8 s measures every run in the second state (BENCHMARKS.md, issue 14, seventeenth
# pass).
set -uo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,21p' "$0" >&2
  exit 2
fi
new=$1 old=$2 runs=$3
shift 3
work=$(mktemp -d /tmp/weir-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Copies, so that a rebuild during the runs changes nothing.
cp "$new" "$work/new" && cp "$old" "$work/old" || exit 1

# figures FILE: "name value" lines of the figures one run printed.
figures() {
  local line
  line=$(grep -E '^(nexmark|process|lake) ' "$1" | tail -1)
  if [ -n "$line" ]; then
    grep -Eq ' verified=(yes|count)' <<<"$line" || return 1  # count: the discard sink's rows
    tr ' ' '\n' <<<"$line" |
      grep -E '^(pipeline_events_per_cpu_s|events_per_cpu_s|ratio_to_duckdb|pipeline_ratio_to_duckdb|allocs_per_event|activations_per_cpu_s|engine_cpu_s|allocs_per_activation|peak_rss_mib|rows_per_cpu_s|day_rows_per_cpu_s|bytes_per_row|allocs_per_row|query_hour_ms|query_latest_ms|duckdb_parquet_hour_ms)=' |
      tr '=' ' '
    return 0
  fi
  sed -nE 's/.* ([0-9.]+) (events|input messages)\/s per core.*/events_per_core \1/p' "$1" | head -1
  sed -nE 's/.* ([0-9.]+) heap allocations per (event|input message).*/allocs_per_event \1/p' "$1" |
    head -1
  grep -qE '(events|input messages)/s per core' "$1"
}

: >"$work/all"
for ((i = 1; i <= runs; i++)); do
  for side in new old; do
    sleep "${COMPARE_PAUSE_S:-0}"
    if ! "$work/$side" "$@" >"$work/out" 2>&1 || ! figures "$work/out" >"$work/fig"; then
      echo "compare.sh: the $side binary's run $i failed or was not verified:" >&2
      tail -5 "$work/out" >&2
      exit 1
    fi
    sed "s/^/$i $side /" "$work/fig" >>"$work/all"
  done
done

# Per figure: the values, the medians and the median ratio of the pairs.
awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { v[$3, $2, $1] = $4; names[$3] = 1; if ($1 > runs) runs = $1 }
  END {
    printf "%-28s %14s %14s %10s   %s\n", "figure", "new (median)", "old (median)", "new/old", "runs new | old"
    for (f in names) {
      nn = no = nr = 0; list_new = list_old = ""
      for (i = 1; i <= runs; i++) {
        if ((f, "new", i) in v) { a[++nn] = v[f, "new", i]; list_new = list_new " " v[f, "new", i] }
        if ((f, "old", i) in v) { b[++no] = v[f, "old", i]; list_old = list_old " " v[f, "old", i] }
        if ((f, "new", i) in v && (f, "old", i) in v && v[f, "old", i] != 0) r[++nr] = v[f, "new", i] / v[f, "old", i]
      }
      printf "%-28s %14s %14s %10s  %s |%s\n", f, nn ? median(a, nn) : "-", no ? median(b, no) : "-",
             nr ? sprintf("%.2fx", median(r, nr)) : "-", list_new, list_old
      delete a; delete b; delete r
    }
  }' "$work/all"
