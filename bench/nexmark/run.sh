#!/usr/bin/env bash
# Runs the Nexmark queries in Weir on this machine (bench/nexmark/README.md): per query one
# unthrottled run (events/s per core) and one at a fixed rate (latency), each verified by
# `weir bench nexmark` against DuckDB. Prints a markdown table beside Flink 1.13's published
# per-core figures and draws them as a PNG with gnuplot. Not part of the tests.
#
# Environment:
#   WEIR=build/src/cli/weir   the weir binary (copied once: a rebuild mid-run changes no row)
#   QUERIES="q0 q1 ..."       queries to run (default all ten)
#   EVENTS=10000000           events per throughput run (QUICK=1: 1000000)
#   RATE=200000               events/s of the fixed-rate (latency) runs; 0 skips them
#   LATENCY_EVENTS=2000000    events per fixed-rate run (QUICK=1: 400000)
#   PLOT=bench/nexmark/nexmark.png  where the plot goes ("" for none)
#   OUT=build-nexmark/last-run      the runs' output and results.tsv (ignored by git)
# Exits non-zero, after the table, when any run fails or is not verified.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

WEIR="${WEIR:-build/src/cli/weir}"
QUERIES="${QUERIES:-q0 q1 q2 q3 q4 q5 q7 q8 q11 q12}"
if [ "${QUICK:-0}" = 1 ]; then
  EVENTS="${EVENTS:-1000000}"
  LATENCY_EVENTS="${LATENCY_EVENTS:-400000}"
else
  EVENTS="${EVENTS:-10000000}"
  LATENCY_EVENTS="${LATENCY_EVENTS:-2000000}"
fi
RATE="${RATE:-200000}"
PLOT="${PLOT-bench/nexmark/nexmark.png}"
OUT="${OUT:-build-nexmark/last-run}"

# Flink 1.13's events/s per core from the nexmark project's README (its own cluster, not this
# machine): the only outside figures here, always labelled as such.
declare -A flink=([q0]=155000 [q1]=158000 [q2]=175000 [q3]=152000 [q4]=34300 [q5]=22100
                  [q7]=12300 [q8]=146000 [q11]=39700 [q12]=75700)
flink_label="Flink 1.13, published (nexmark README), other hardware"

work=$(mktemp -d /tmp/weir-nexmark.XXXXXX)
trap 'rm -rf "$work"' EXIT
# `bench --help` must list it: `bench nexmark --help` exits 0 even where there is no nexmark.
if ! [ -x "$WEIR" ] || ! "$WEIR" bench --help 2>/dev/null | grep -qE '^ +nexmark( |$)'; then
  echo "nexmark/run.sh: $WEIR has no 'bench nexmark' (build it: ./dev build)" >&2
  exit 1
fi
cp "$WEIR" "$work/weir" || exit 1
rm -rf "$OUT" && mkdir -p "$OUT"

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
[ -n "$cpu_model" ] || cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
machine="$(nproc) cores, $cpu_model"
echo "machine: $machine, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (src with uncommitted changes)')"
echo "weir:    $WEIR, built $(date -r "$WEIR" '+%F %T')"
echo "runs:    $EVENTS events unthrottled; $LATENCY_EVENTS events at $RATE events/s (0: none)"

# The TSV's columns: the keys of the `nexmark ` line that the tables and the plot use.
keys=(query events rate verified rows events_per_cpu_s generator_events_per_cpu_s
      pipeline_events_per_cpu_s duckdb_events_per_cpu_s ratio_to_duckdb peak_rss_mib
      allocs_per_event p50_ms p99_ms wall_s)
tsv="$OUT/results.tsv"
(IFS=$'\t'; echo "run	exit	${keys[*]}") >"$tsv"

failures=0
# run_query QUERY KIND ARGS...: one run; appends its row to the TSV ("-" for a missing value).
# stdout and stderr are kept apart so that only weir's stdout can supply the `nexmark ` line.
run_query() {
  local q=$1 kind=$2 name="$1-$2" rc line row
  shift 2
  echo "$q $kind ..." >&2
  "$work/weir" bench nexmark --query "$q" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  rc=$?
  line=$(grep '^nexmark ' "$OUT/$name.out" | tail -1)
  row="$kind	$rc"
  for k in "${keys[@]}"; do
    v=$(tr ' ' '\n' <<<"$line" | sed -n "s/^$k=//p")
    row+="	${v:--}"
  done
  # The query column names the query asked for, even when the run printed no line.
  row=$(awk -F'\t' -v OFS='\t' -v q="$q" '{ $3 = q; print }' <<<"$row")
  echo "$row" >>"$tsv"
  if [ "$rc" -ne 0 ] || ! grep -q ' verified=yes' <<<"$line"; then
    local verdict="no 'nexmark ' line"
    [ -n "$line" ] && verdict="verified=$(tr ' ' '\n' <<<"$line" | sed -n 's/^verified=//p')"
    echo "nexmark/run.sh: $q $kind failed (exit $rc, $verdict); see $OUT/$name.{out,err}" >&2
    tail -3 "$OUT/$name.err" >&2
    failures=$((failures + 1))
  fi
}

for q in $QUERIES; do
  run_query "$q" throughput --events "$EVENTS"
  [ "$RATE" -gt 0 ] && run_query "$q" rate --events "$LATENCY_EVENTS" --rate "$RATE"
done

# field KIND QUERY KEY: a value from the TSV.
field() {
  awk -F'\t' -v kind="$1" -v q="$2" -v key="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == kind && $3 == q { v = $col[key] }
    END { print (v == "" ? "-" : v) }' "$tsv"
}
# rate_fmt VALUE: events/s to three digits, as 155K, 34.3K or 1.20M, like the nexmark README.
rate_fmt() {
  awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-";
    else if (v >= 1e6) printf "%.2fM\n", v / 1e6; else if (v >= 1e5) printf "%.0fK\n", v / 1e3;
    else if (v >= 1e4) printf "%.1fK\n", v / 1e3; else if (v >= 1e3) printf "%.2fK\n", v / 1e3;
    else printf "%.0f\n", v }'
}

echo
echo "### Nexmark in Weir, events/s per core ($machine)"
echo
echo "Per core = events / CPU-seconds of the process. \"with generator\" is the figure Flink's"
echo "is set against (the nexmark project counts its source generator too). $EVENTS events"
echo "unthrottled; latency (p50/p99, ms) from $LATENCY_EVENTS events at $RATE events/s."
echo
echo "| query | Weir, with generator | generator alone | pipeline only | DuckDB batch | peak MiB | p50 ms | p99 ms | verified | $flink_label | Weir / Flink |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
plot_data="$OUT/plot.dat"
: >"$plot_data"
notes=()
for q in $QUERIES; do
  weir_pc=$(field throughput "$q" events_per_cpu_s)
  verified=$(field throughput "$q" verified)
  if [ "$RATE" -gt 0 ]; then
    v2=$(field rate "$q" verified)
    [ "$verified" = yes ] && [ "$v2" = yes ] || verified="**no** ($verified / $v2)"
    # A fixed-rate run that took much longer than events/rate fell behind: its latency is queueing.
    behind=$(awk -v w="$(field rate "$q" wall_s)" -v e="$LATENCY_EVENTS" -v r="$RATE" \
      'BEGIN { if (w != "-" && w + 0 > 1.1 * e / r) printf "%.0f", e / w }')
    [ -n "$behind" ] && notes+=("- $q did not keep up with $(rate_fmt "$RATE") events/s (about $(rate_fmt "$behind")): its latency is mostly queueing.")
  elif [ "$verified" != yes ]; then
    verified="**no** ($verified)"
  fi
  fl=${flink[$q]:-}
  ratio=$(awk -v a="$weir_pc" -v b="${fl:--}" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.1fx\n", a / b }')
  echo "| $q | **$(rate_fmt "$weir_pc")** | $(rate_fmt "$(field throughput "$q" generator_events_per_cpu_s)") | $(rate_fmt "$(field throughput "$q" pipeline_events_per_cpu_s)") | $(rate_fmt "$(field throughput "$q" duckdb_events_per_cpu_s)") | $(field throughput "$q" peak_rss_mib) | $(field rate "$q" p50_ms) | $(field rate "$q" p99_ms) | $verified | $(rate_fmt "${fl:--}") | $ratio |"
  # A query that was not verified keeps its bar, marked so under it.
  xtic=$q
  [ "$verified" = yes ] || xtic="$q (NOT verified)"
  echo "\"$xtic\" ${weir_pc} ${fl:--}" >>"$plot_data"
done
[ ${#notes[@]} -gt 0 ] && { echo; printf '%s\n' "${notes[@]}"; }
echo
echo "runs' output and results.tsv: $OUT/"

# ------------------------------------------------------------------------------------- plot
if [ -n "$PLOT" ]; then
  if ! command -v gnuplot >/dev/null; then
    echo "nexmark/run.sh: no gnuplot (./dev deps installs gnuplot-nox); no plot" >&2
  else
    mkdir -p "$(dirname "$PLOT")"
    # Log scale: the queries span two orders of magnitude (q7 12K to q2 175K for Flink alone).
    # Bars start at the bottom of the range (1K), not 0, which a log axis cannot show.
    if gnuplot >"$OUT/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo size 1100,650 font "sans,10"
set output "$PLOT"
set title "Nexmark, events/s per core, generator included\nWeir: this machine ($machine), $(rate_fmt "$EVENTS") events per query\n$flink_label"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [1000:*]
set format y "%.0s%c"
set ylabel "events/s per core (log scale)"
set grid ytics
set key outside bottom center horizontal
set datafile missing "-"
# Two bars per cluster, each a third of the cluster's width: centres at x -/+ 1/6.
fmt(v) = v >= 1e6 ? sprintf("%.2fM", v / 1e6) : v >= 1e5 ? sprintf("%.0fK", v / 1e3) : sprintf("%.1fK", v / 1e3)
plot "$plot_data" using 2:xtic(1) title "Weir (this machine)" lc rgb "#1f77b4", \
     "" using 3 title "$flink_label" lc rgb "#aaaaaa", \
     "" using (\$0 - 1.0/6):2:(fmt(\$2)) with labels offset 0,0.6 font "sans,8" notitle, \
     "" using (\$0 + 1.0/6):3:(fmt(\$3)) with labels offset 0,0.6 font "sans,8" notitle
EOF
    then
      echo "plot:    $PLOT"
    else
      echo "nexmark/run.sh: gnuplot failed:" >&2; cat "$OUT/gnuplot.log" >&2; failures=$((failures + 1))
    fi
  fi
fi

[ "$failures" -eq 0 ] || { echo "nexmark/run.sh: $failures run(s) failed or were not verified" >&2; exit 1; }
