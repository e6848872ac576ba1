#!/usr/bin/env bash
# A JSON topic through a filter into another topic, with `weir run`: the path on which a value
# no step changed is written as the text it was read from (src/dataflow/README.md,
# UnchangedInput). Makes a topic of EVENTS Nexmark events as JSON once, then runs the pipeline
# `source: {topic: events} -> filter: {field: type, eq: bid} -> sink: {topic: bids}` with NEW and
# OLD in turn (A B A B ...), RUNS times each, each run from a fresh output and pipeline state,
# and prints every run's user and system CPU seconds, then each binary's medians and events/s
# per core (user + system). Not part of the tests.
#
# SOURCE=jetstream reads the events from a NATS JetStream stream instead (a nats-server of the
# script's own, on a free port, its store in the work folder): the events are written as JSON
# lines once ({"key", "timestamp", "value"}: the filter reads value.type), published to stream
# EVENTS with python3 over the NATS protocol, and each run reads them all through a durable
# consumer of its own.
#
#   [SOURCE=jetstream] bench/filter_topic.sh NEW OLD [RUNS] [EVENTS]
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
new=$1 old=$2 runs=${3:-5} events=${4:-2000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source=${SOURCE:-topic}
sink="{topic: events}"
[ "$source" = jetstream ] && sink="{file: $work/events.jsonl}"
cat >"$work/make.yaml" <<YAML
source: {nexmark: {partitions: 2, events: $events, real_time: false, seed: 3}}
steps: []
sink: $sink
YAML
"$new" run "$work/make.yaml" --data-dir "$work/data" -q --listen off >/dev/null 2>&1
# The pipeline of run $1: its source, its filter's field.
pipeline() {
  if [ "$source" = jetstream ]; then
    printf 'source: {jetstream: {url: "nats://127.0.0.1:%s", stream: EVENTS, durable: run%s}, bounded: true}\n' \
      "$nats_port" "$1"
    echo 'steps: [{filter: {field: value.type, eq: bid}}]'
  else
    echo 'source: {topic: events, bounded: true}'
    echo 'steps: [{filter: {field: type, eq: bid}}]'
  fi
  echo 'sink: {topic: bids}'
}
if [ "$source" = jetstream ]; then
  nats_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$work/nats" >"$work/nats.log" 2>&1 &
  nats_pid=$!
  trap 'kill $nats_pid 2>/dev/null; wait $nats_pid 2>/dev/null; rm -rf "$work"' EXIT
  python3 - "$nats_port" "$work/events.jsonl" <<'PY'
import json, socket, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        time.sleep(0.1)
f = s.makefile("rb")
f.readline()  # INFO
s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB _INBOX.r 1\r\n')
def request(subject, body):
    s.sendall(b"PUB %s _INBOX.r %d\r\n%s\r\n" % (subject, len(body), body))
    while True:
        line = f.readline()
        if line.startswith(b"MSG"):
            reply = json.loads(f.read(int(line.split()[-1]) + 2))
            if "error" in reply:
                sys.exit("nats: " + json.dumps(reply["error"]))
            return reply
        if line.startswith(b"PING"):
            s.sendall(b"PONG\r\n")
request(b"$JS.API.STREAM.CREATE.EVENTS",
        json.dumps({"name": "EVENTS", "subjects": ["events"], "storage": "file"}).encode())
lines = 0
with open(path, "rb") as events:
    chunk = []
    for line in events:
        line = line.rstrip(b"\n")
        chunk.append(b"PUB events %d\r\n%s\r\n" % (len(line), line))
        lines += 1
        if len(chunk) == 1000:
            s.sendall(b"".join(chunk))
            chunk = []
    s.sendall(b"".join(chunk))
while request(b"$JS.API.STREAM.INFO.EVENTS", b"")["state"]["messages"] < lines:
    time.sleep(0.2)
PY
fi

TIMEFORMAT='%U %S'
: >"$work/times"
for ((i = 1; i <= runs; i++)); do
  for side in new old; do
    rm -rf "$work/data/log/bids" "$work/data/log/filter.dlq" "$work/data/apps/filter"
    binary=$new
    [ "$side" = old ] && binary=$old
    pipeline "$i$side" >"$work/filter.yaml"
    if ! t=$({ time "$binary" run "$work/filter.yaml" --data-dir "$work/data" -q --listen off \
      >/dev/null 2>"$work/run.err"; } 2>&1 | tail -1); then
      echo "$i $side failed:" >&2
      cat "$work/run.err" >&2
      exit 1
    fi
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
