#!/bin/sh
# Checks that the state cache's prefetch hints are in the compiled code (core/prefetch.h): a
# compiler that finds a prefetch-only function "pure" deletes the calls, and nothing else would
# notice (a hint changes no result, only the speed). Counts the prefetch instructions of
# KeyValueStore::PrefetchHash in the state library: stage 0 prefetches the slot, stage 1 both lines of
# the node, stage 2 the key's bytes and the value's elements: at least 5.
#   prefetch_hints.sh OBJDUMP LIBRARY release|sanitized
# Skipped (77) where it cannot look (not x86-64, no objdump) or the build is sanitized.
objdump=$1 library=$2 build=$3
[ "$build" = release ] || exit 77
[ "$(uname -m)" = x86_64 ] && command -v "$objdump" >/dev/null 2>&1 || exit 77
count=$("$objdump" -d --no-show-raw-insn -C "$library" |
  awk '/^[0-9a-f]+ <weir::state::KeyValueStore::PrefetchHash\(.*>:$/ { inside = 1; next }
       /^$/ { inside = 0 }
       inside && /prefetch/ { n++ }
       END { print n + 0 }')
echo "KeyValueStore::PrefetchHash has $count prefetch instructions"
[ "$count" -ge 5 ] || { echo "FAIL: the prefetch hints were compiled away" >&2; exit 1; }
