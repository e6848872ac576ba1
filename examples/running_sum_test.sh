#!/bin/sh
# Examples.RunningSum: running_sum over orders with two bad ones (an amount written as a string,
# a line that is not JSON) finishes with both as dead letters and the right totals; run again on
# the same data directory it resumes, reads nothing new and reads back the same totals.
#
#   running_sum_test.sh RUNNING_SUM WORK_DIR
set -eu
bin=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/orders.jsonl" <<'ORDERS'
{"order":"o1","customer":"ann","ts":1,"amount":5}
{"order":"o2","customer":"bob","ts":2,"amount":7}
{"order":"o3","customer":"ann","ts":3,"amount":"12"}
not json
{"order":"o4","customer":"ann","ts":4,"amount":10}
ORDERS
expect() {
  if [ "$1" != "$2" ]; then
    printf 'expected:\n%s\ngot:\n%s\n' "$2" "$1"
    exit 1
  fi
}
first=$("$bin" "$dir/orders.jsonl" "$dir/data")
expect "$first" 'running_sum: 4 records in, 2 dead letters (1 in user functions)
"ann" 15
"bob" 7'
again=$("$bin" "$dir/orders.jsonl" "$dir/data")
expect "$again" 'running_sum: 0 records in, 0 dead letters (0 in user functions)
"ann" 15
"bob" 7'
echo "running_sum: ok"
