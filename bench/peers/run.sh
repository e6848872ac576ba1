#!/usr/bin/env bash
# Weir side by side with its peers on this machine (bench/peers/README.md): builds the drivers in
# build-peers/, starts each server on a free loopback port with a fresh temp dir, drives it,
# stops it, and prints a markdown table per comparison: (a) fan-out against a ws broadcast
# server (npm's ws, installed on demand in build-peers/npm/), (b) durable publish + replay
# against JetStream and redis Streams, (c) the session-window query (Nexmark q11) against
# DuckDB batch; then one table of all of them. Not part of the tests.
#
# Environment:
#   WEIR=build/src/cli/weir   the weir binary; without `weir serve` its rows say "not available"
#   QUICK=1                   seconds-long runs, for development
#   SUBSCRIBERS="100 1000"    fan-out sizes
#   FANOUT_RATE_DELIVERIES=50000  deliveries/s of the fixed-rate runs (rate = this / subscribers)
#   FANOUT_SECONDS=5          length of a fan-out run (fixed-rate and saturation)
#   DURABLE_MESSAGES=200000   messages appended then replayed per durable run
#   INFLIGHT=4096             messages sent and not yet acknowledged, for every durable peer
#   FANOUT_WINDOW_DELIVERIES=100000  saturation: deliveries published and not yet received
#                             (the window in messages is this / subscribers)
#   SESSION_EVENTS=10000000   events of the Nexmark q11 run (QUICK=1: 1000000)
#   WS_VERSION=8.23.0         npm ws version of the fan-out peer (with bufferutil, as ws advises)
#   ONLY="fanout durable session"  which comparisons to run
# Drivers' full output and the servers' logs stay in build-peers/last-run/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)

WEIR="${WEIR:-build/src/cli/weir}"
SUBSCRIBERS="${SUBSCRIBERS:-100 1000}"
ONLY="${ONLY:-fanout durable session}"
WS_VERSION="${WS_VERSION:-8.23.0}"
BUFFERUTIL_VERSION="${BUFFERUTIL_VERSION:-4.1.0}"
INFLIGHT="${INFLIGHT:-4096}"
FANOUT_WINDOW_DELIVERIES="${FANOUT_WINDOW_DELIVERIES:-100000}"
if [ "${QUICK:-0}" = 1 ]; then
  FANOUT_RATE_DELIVERIES="${FANOUT_RATE_DELIVERIES:-20000}"
  FANOUT_SECONDS="${FANOUT_SECONDS:-2}"
  DURABLE_MESSAGES="${DURABLE_MESSAGES:-20000}"
  SESSION_EVENTS="${SESSION_EVENTS:-1000000}"
else
  FANOUT_RATE_DELIVERIES="${FANOUT_RATE_DELIVERIES:-50000}"
  FANOUT_SECONDS="${FANOUT_SECONDS:-5}"
  DURABLE_MESSAGES="${DURABLE_MESSAGES:-200000}"
  SESSION_EVENTS="${SESSION_EVENTS:-10000000}"
fi
# Only npm's ws: Debian's (/usr/share/nodejs) must not be picked up instead.
npm_dir=build-peers/npm
export NODE_PATH="$root/$npm_dir/node_modules"
wants() { [[ " $ONLY " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------------- build
if [ ! -f build-peers/build.ninja ]; then
  cmake -S . -B build-peers -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
fi
ninja -C build-peers fanout_driver durable_weir durable_jetstream durable_redis >/dev/null ||
  { echo "run.sh: building the drivers failed (ninja -C build-peers ...)" >&2; exit 1; }
bin=build-peers/bench/peers

ulimit -n 65536 2>/dev/null || true
logs=build-peers/last-run
rm -rf "$logs" && mkdir -p "$logs"
work=$(mktemp -d /tmp/weir-peers.XXXXXX)  # on disk (not tmpfs): fsync costs what it costs
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT
failures=0

# Decided once, on a copy: a binary rebuilt in the middle of a run must not change rows halfway.
weir_serves=0 weir_nexmark=0
if [ -x "$WEIR" ] && cp "$WEIR" "$work/weir"; then
  "$work/weir" serve --help >/dev/null 2>&1 && weir_serves=1
  # Listed by `bench --help`: `bench nexmark --help` exits 0 even where there is no nexmark.
  "$work/weir" bench --help 2>/dev/null | grep -qE '^ +nexmark( |$)' && weir_nexmark=1
fi
weir_available() { [ "$weir_serves" = 1 ]; }

# The fan-out peer is ws from npm, as its users install it, not Debian's older node-ws; with
# bufferutil, the add-on ws's README advises for performance (it unmasks received frames; it has
# prebuilt binaries, so npm's refusal to run install scripts does not matter). utf-8-validate,
# the other one, is unused on node >= 18.14: ws calls buffer.isUtf8 instead. Node is Debian's.
if wants fanout; then
  if [ "$(node -p 'require("ws/package.json").version' 2>/dev/null)" != "$WS_VERSION" ] ||
     ! node -e 'require("bufferutil")' 2>/dev/null; then
    echo "run.sh: installing ws@$WS_VERSION bufferutil@$BUFFERUTIL_VERSION from npm into $npm_dir/" >&2
    mkdir -p "$npm_dir"
    npm install --no-save --no-audit --no-fund --prefix "$npm_dir" "ws@$WS_VERSION" \
      "bufferutil@$BUFFERUTIL_VERSION" >"$logs/npm-install.log" 2>&1 ||
      { echo "run.sh: npm install failed; see $logs/npm-install.log" >&2; exit 1; }
  fi
  case "$(node -p 'require.resolve("ws")')" in
    "$root/$npm_dir/"*) ;;
    *) echo "run.sh: ws does not resolve to $npm_dir/" >&2; exit 1 ;;
  esac
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listening PORT: until the started server accepts connections (10 s at most).
wait_listening() {
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}



# start_server NAME PORT COMMAND...: runs COMMAND in the background, logging to last-run/NAME.log.
start_server() {
  local name=$1 port=$2
  shift 2
  "$@" >"$logs/$name.log" 2>&1 &
  server_pid=$!
  if ! wait_listening "$port"; then
    echo "run.sh: $name did not start listening on $port; log:" >&2
    tail -5 "$logs/$name.log" >&2
    stop_server
    return 1
  fi
}

start_ws() { start_server "$1" "$2" node bench/peers/ws_broadcast.js "$2"; }

# start_weir NAME PORT TOPIC [ARGS...]: a fresh data dir holding TOPIC, served (with ARGS).
start_weir() {
  local dir="$work/$1" name=$1 port=$2 topic=$3
  shift 3
  rm -rf "$dir"
  "$work/weir" topics create "$topic" --data-dir "$dir" >"$logs/$name.create.log" 2>&1 ||
    { echo "run.sh: weir topics create failed:" >&2; cat "$logs/$name.create.log" >&2; return 1; }
  start_server "$name" "$port" "$work/weir" serve --data-dir "$dir" --listen "127.0.0.1:$port" "$@"
}

start_nats() {
  rm -rf "${work:?}/$1"
  start_server "$1" "$2" nats-server -js -a 127.0.0.1 -p "$2" -sd "$work/$1"
}

# start_redis NAME PORT FSYNC: AOF on (appendfsync FSYNC), no RDB snapshots.
start_redis() {
  rm -rf "${work:?}/$1" && mkdir -p "$work/$1"
  start_server "$1" "$2" redis-server --bind 127.0.0.1 --port "$2" --dir "$work/$1" \
    --appendonly yes --appendfsync "$3" --save "" --protected-mode no
}

# result FILE KEY: a value of the RESULT line a driver printed.
result() { grep '^RESULT' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# n VALUE: a whole number with thousands separators.
n() { awk -v v="$1" 'BEGIN { s = sprintf("%.0f", v); o = "";
  while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
  print s o }'; }

# run_driver NAME COMMAND...: runs a driver, keeps its output; returns its status.
run_driver() {
  local name=$1
  shift
  if "$@" >"$logs/$name.out" 2>&1; then return 0; fi
  echo "run.sh: $name failed:" >&2
  tail -3 "$logs/$name.out" >&2
  failures=$((failures + 1))
  return 1
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (src with uncommitted changes)')"
ws_version="-"
wants fanout && ws_version=$(node -p 'require("ws/package.json").version + " (npm) + bufferutil " + require("bufferutil/package.json").version')
duckdb_version=$(sed -n 's/^DUCKDB_VERSION=//p' dev)
echo "peers:   ws $ws_version on node $(node --version)," \
     "$(nats-server --version), redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')," \
     "duckdb ${duckdb_version:-?} (./dev's pin; linked into weir)"
if [ -x "$WEIR" ]; then
  echo "weir:    $WEIR, built $(date -r "$WEIR" '+%F %T');" \
       "serve: $([ "$weir_serves" = 1 ] && echo yes || echo no), bench nexmark: $([ "$weir_nexmark" = 1 ] && echo yes || echo no)"
else
  echo "weir:    not available ($WEIR)"
fi

# The last table: one row per system and workload of every comparison.
summary_rows=()
summary() {  # summary COMPARISON SYSTEM WORKLOAD METRIC VALUE PER_CORE
  summary_rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |")
}

# ------------------------------------------------------------------------------- (a) fan-out
fanout_rows=()
fanout_notes=()
# fanout_case SYSTEM SUBS MODE: one run, one table row.
fanout_case() {
  local system=$1 subs=$2 mode=$3 port name rate messages load window=1
  name="fanout-$system-$subs-$mode"
  if [ "$mode" = rate ]; then
    rate=$((FANOUT_RATE_DELIVERIES / subs))
    [ "$rate" -ge 1 ] || rate=1
    messages=$((rate * FANOUT_SECONDS))
    load="$rate msg/s ($(n $((rate * subs))) deliveries/s)"
  else
    rate=0
    messages=1000000000  # the run stops after FANOUT_SECONDS
    window=$((FANOUT_WINDOW_DELIVERIES / subs))
    [ "$window" -ge 1 ] || window=1
    load="saturation, ${FANOUT_SECONDS} s, $window msgs in flight"
  fi
  local row_head="| $subs | $load | $system"
  port=$(free_port)
  local args=(--system "$system" --subscribers "$subs" --messages "$messages" --rate "$rate"
              --seconds "$FANOUT_SECONDS" --warmup 200 --window "$window" --timeout 300)
  if [ "$system" = ws ]; then
    start_ws "$name" "$port" || { fanout_rows+=("$row_head | server did not start | | | | | | |"); failures=$((failures + 1)); return; }
    args+=(--format raw --sub-url "ws://127.0.0.1:$port/sub" --pub-url "ws://127.0.0.1:$port/pub")
  else
    if ! weir_available; then
      fanout_rows+=("$row_head | weir: not available | | | | | | |")
      summary "fan-out" "$system" "$subs subscribers, $load" "deliveries/s" "weir: not available" "-"
      return
    fi
    local weir_args=()
    # weir-nofsync: written to the OS before delivery (survives a crash of the process, not of
    # the machine), as the ws server's messages are not written anywhere.
    [ "$system" = weir-nofsync ] && weir_args=(--fsync never)
    start_weir "$name" "$port" fan "${weir_args[@]}" || { fanout_rows+=("$row_head | server did not start | | | | | | |"); failures=$((failures + 1)); return; }
    args+=(--format weir --sub-url "ws://127.0.0.1:$port/streams/fan"
           --pub-url "ws://127.0.0.1:$port/publish/fan")
  fi
  echo "(a) $system, $subs subscribers, $load ..." >&2
  if run_driver "$name" "$bin/fanout_driver" "${args[@]}" --server-pid "$server_pid"; then
    local f="$logs/$name.out"
    summary "fan-out" "$system" "$subs subscribers, $load" "deliveries/s (p50 / p99 us)" \
      "$(n "$(result "$f" deliveries_per_s)") ($(n "$(result "$f" p50_us)") / $(n "$(result "$f" p99_us)"))" \
      "$(n "$(result "$f" deliveries_per_cpu_s)") deliveries per server CPU-s"
    fanout_rows+=("$row_head | $(n "$(result "$f" deliveries_per_s)") | $(awk -v c="$(result "$f" server_cpu_s)" -v s="$(result "$f" seconds)" 'BEGIN{printf "%.2f", c/s}') | **$(n "$(result "$f" deliveries_per_cpu_s)")** | $(n "$(result "$f" p50_us)") | $(n "$(result "$f" p99_us)") | $(n "$(result "$f" p999_us)") | $(awk -v p="$(result "$f" driver_cpu_pct)" 'BEGIN{printf "%.0f%%", p}') |")
  else
    fanout_rows+=("$row_head | FAILED: $(grep -m1 '^FAIL' "$logs/$name.out" | cut -c1-120) | | | | | | |")
    summary "fan-out" "$system" "$subs subscribers, $load" "deliveries/s" "FAILED" "-"
  fi
  stop_server
}

ratio() {  # ratio FILE_A FILE_B KEY: A/B of a RESULT value, or "-"
  local a b
  a=$(result "$1" "$3" 2>/dev/null) b=$(result "$2" "$3" 2>/dev/null)
  if [ -n "$a" ] && [ -n "$b" ]; then awk -v a="$a" -v b="$b" 'BEGIN{printf "%.1fx", a/b}'; else echo "-"; fi
}

if wants fanout; then
  for subs in $SUBSCRIBERS; do
    for mode in rate saturation; do
      fanout_case ws "$subs" "$mode"
      fanout_case weir "$subs" "$mode"
      fanout_case weir-nofsync "$subs" "$mode"
      a="$logs/fanout-weir-$subs-$mode.out" b="$logs/fanout-ws-$subs-$mode.out"
      if [ -f "$a" ] && grep -q '^RESULT' "$a" && grep -q '^RESULT' "$b"; then
        fanout_notes+=("- $subs subscribers, $mode: weir/ws deliveries per server CPU-s $(ratio "$a" "$b" deliveries_per_cpu_s), p99 $(n "$(result "$a" p99_us)") us vs $(n "$(result "$b" p99_us)") us; weir's publish-to-ack (durable) p50 $(n "$(result "$a" ack_p50_us)") us, p99 $(n "$(result "$a" ack_p99_us)") us")
      fi
    done
  done
fi

# ------------------------------------------------------------------- (b) durable append + replay
durable_rows=()
# proc_cpu PID: utime + stime of a process (all threads) in seconds, from /proc/PID/stat (field 2
# may hold spaces: fields are counted after the last ')').
proc_cpu() {
  awk -v tck="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / tck }' \
    "/proc/$1/stat" 2>/dev/null
}
durable_cpu=""
# durable_driver NAME COMMAND...: run_driver, and the server's CPU over the run in durable_cpu
# (appends and replay together, connection set-up included: the drivers do not report it).
durable_driver() {
  local before after
  before=$(proc_cpu "$server_pid")
  run_driver "$@"
  after=$(proc_cpu "$server_pid")
  durable_cpu=$(awk -v a="$before" -v b="$after" 'BEGIN { if (a != "" && b != "") printf "%.2f", b - a }')
}
# durable_row SYSTEM DURABILITY PUBLISH OUTFILE
durable_row() {
  if grep -q '^RESULT' "$4" 2>/dev/null; then
    local per_cpu="-"
    [ -n "$durable_cpu" ] && per_cpu=$(awk -v m="$DURABLE_MESSAGES" -v c="$durable_cpu" 'BEGIN { if (c > 0) printf "%.0f", 2 * m / c; else print "-" }')
    [ "$per_cpu" = - ] || per_cpu=$(n "$per_cpu")
    durable_rows+=("| $1 | $2 | $3 | **$(n "$(result "$4" appends_per_s)")** | **$(n "$(result "$4" replay_per_s)")** | ${durable_cpu:--} | $per_cpu |")
    summary "durable append + replay" "$1" "$(n "$DURABLE_MESSAGES") x 100 B; ack: $2" \
      "appends/s / replay msgs/s" "$(n "$(result "$4" appends_per_s)") / $(n "$(result "$4" replay_per_s)")" \
      "$per_cpu msgs (appended + replayed) per server CPU-s"
  else
    durable_rows+=("| $1 | $2 | $3 | FAILED: $(grep -m1 '^FAIL' "$4" 2>/dev/null | cut -c1-100) | | | |")
    summary "durable append + replay" "$1" "ack: $2" "appends/s / replay msgs/s" "FAILED" "-"
  fi
  durable_cpu=""
}

if wants durable; then
  m=$DURABLE_MESSAGES
  weir_durability="fdatasync before ack (group commit)"
  for batch in 100 1; do
    inflight_frames=$(( (INFLIGHT + batch - 1) / batch ))
    publish="WebSocket /publish, $batch msg/frame, $inflight_frames frames in flight"
    if ! weir_available; then
      durable_rows+=("| weir, $batch msg/frame | $weir_durability | $publish | weir: not available | | | |")
      summary "durable append + replay" "weir, $batch msg/frame" "ack: $weir_durability" "appends/s / replay msgs/s" "weir: not available" "-"
      continue
    fi
    port=$(free_port) name="durable-weir-$batch"
    echo "(b) weir, $batch per frame ..." >&2
    if start_weir "$name" "$port" bench; then
      durable_driver "$name" "$bin/durable_weir" --server "127.0.0.1:$port" --topic bench \
        --messages "$m" --batch "$batch" --inflight "$inflight_frames" --label weir
      stop_server
    else
      echo "FAIL: server did not start" >"$logs/$name.out"; failures=$((failures + 1))
    fi
    durable_row "weir, $batch msg/frame" "$weir_durability" "$publish" "$logs/$name.out"
  done

  port=$(free_port) name=durable-jetstream
  echo "(b) jetstream ..." >&2
  if start_nats "$name" "$port"; then
    durable_driver "$name" "$bin/durable_jetstream" --server "127.0.0.1:$port" --messages "$m" \
      --inflight "$INFLIGHT"
    stop_server
  else
    echo "FAIL: server did not start" >"$logs/$name.out"; failures=$((failures + 1))
  fi
  durable_row "nats-server JetStream" "file storage; acked once written, fsync every 2 min" \
    "js_PublishAsync, $INFLIGHT in flight" "$logs/$name.out"

  for fsync in always everysec; do
    port=$(free_port) name="durable-redis-$fsync"
    echo "(b) redis appendfsync $fsync ..." >&2
    if start_redis "$name" "$port" "$fsync"; then
      durable_driver "$name" "$bin/durable_redis" --server "127.0.0.1:$port" --messages "$m" \
        --pipeline "$INFLIGHT" --label "redis-$fsync"
      stop_server
    else
      echo "FAIL: server did not start" >"$logs/$name.out"; failures=$((failures + 1))
    fi
    if [ "$fsync" = always ]; then d="AOF, appendfsync always (fsync before reply)"; else d="AOF, appendfsync everysec"; fi
    durable_row "redis-server Streams" "$d" "XADD pipelined, $INFLIGHT in flight" "$logs/$name.out"
  done
fi

# ------------------------------------------------------ (c) session windows: Weir vs DuckDB batch
# Nexmark q11 (bids per bidder in session windows, 10 s gap) in one `weir bench nexmark` run:
# Weir computes it streaming, DuckDB as a batch over the same events, and the run fails unless
# the two results are equal. Both per-core figures come from that one `nexmark ` line.
session_rows=()
# nexmark_field FILE KEY: a value of the last `nexmark ` line weir printed.
nexmark_field() { grep '^nexmark ' "$1" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }
if wants session; then
  workload="Nexmark q11, $(n "$SESSION_EVENTS") events"
  if [ "$weir_nexmark" != 1 ]; then
    session_rows+=("| Weir | weir: not available (bench nexmark) | | | |")
    summary "session windows" "Weir" "$workload" "events per CPU-s" "weir: not available" "-"
  else
    echo "(c) nexmark q11, $SESSION_EVENTS events ..." >&2
    f="$logs/session-q11.out"
    "$work/weir" bench nexmark --query q11 --events "$SESSION_EVENTS" >"$f" 2>"$logs/session-q11.err"
    rc=$?
    verified=$(nexmark_field "$f" verified)
    if [ "$rc" -ne 0 ] || [ "$verified" != yes ]; then
      echo "run.sh: nexmark q11 failed (exit $rc, verified=${verified:-?}); see $logs/session-q11.{out,err}" >&2
      failures=$((failures + 1))
    fi
    weir_pc=$(nexmark_field "$f" events_per_cpu_s)
    duck_pc=$(nexmark_field "$f" duckdb_events_per_cpu_s)
    check="${verified:-no} (exit $rc)"
    [ "$verified" = yes ] && check="yes: same rows ($(nexmark_field "$f" rows))"
    session_rows+=("| Weir, streaming (generator included) | **$(n "${weir_pc:-0}")** | $(n "$(nexmark_field "$f" pipeline_events_per_cpu_s)") | $(nexmark_field "$f" peak_rss_mib) | $check |")
    session_rows+=("| DuckDB batch, same events | **$(n "${duck_pc:-0}")** | | | $check |")
    summary "session windows" "Weir, streaming" "$workload" "verified against DuckDB" "$check" "$(n "${weir_pc:-0}") events per CPU-s"
    summary "session windows" "DuckDB batch" "$workload" "same result as Weir" "$check" "$(n "${duck_pc:-0}") events per CPU-s"
  fi
fi

# ----------------------------------------------------------------------------------- tables
if [ ${#fanout_rows[@]} -gt 0 ]; then
  echo
  echo "### (a) Fan-out: 1 publisher, 100-byte messages, loopback"
  echo
  echo "| subscribers | load | server | deliveries/s | server CPU (cores) | deliveries per server CPU-s | p50 us | p99 us | p99.9 us | driver CPU |"
  echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${fanout_rows[@]}"
  [ ${#fanout_notes[@]} -gt 0 ] && { echo; printf '%s\n' "${fanout_notes[@]}"; }
fi
if [ ${#durable_rows[@]} -gt 0 ]; then
  echo
  echo "### (b) Durable publish + replay: $(n "$DURABLE_MESSAGES") messages of 100 bytes"
  echo
  echo "| system | durability of an ack | publish | appends/s | replay msgs/s | server CPU-s | msgs per server CPU-s |"
  echo "|---|---|---|---:|---:|---:|---:|"
  printf '%s\n' "${durable_rows[@]}"
fi
if [ ${#session_rows[@]} -gt 0 ]; then
  echo
  echo "### (c) Session windows (Nexmark q11): $(n "$SESSION_EVENTS") events, Weir streaming vs DuckDB batch"
  echo
  echo "| system | events per CPU-s | pipeline only, per CPU-s | peak MiB | verified |"
  echo "|---|---:|---:|---:|---|"
  printf '%s\n' "${session_rows[@]}"
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores; other work on the machine skews latency most)"
echo "drivers' output and server logs: $logs/"
if [ ${#summary_rows[@]} -gt 0 ]; then
  echo
  echo "### All comparisons, this machine, one run"
  echo
  echo "| comparison | system | workload | metric | value | per core |"
  echo "|---|---|---|---|---:|---:|"
  printf '%s\n' "${summary_rows[@]}"
fi
[ "$failures" -eq 0 ] || { echo "run.sh: $failures run(s) failed" >&2; exit 1; }
