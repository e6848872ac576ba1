#!/usr/bin/env bash
# What the machine charges for memory a process touches for the first time: writes MIB MiB into
# a new file in DIR twice, deleting it between, and prints each pass's rate. The first pass takes
# pages the kernel has not used lately; the second takes the pages the first freed. On a virtual
# machine whose guest returns free memory to its host (virtio-balloon free page reporting, as on
# Firecracker with page_reporting.page_reporting_order in /proc/cmdline) the first pass is many
# times slower: every page is faulted in by the host again. A bench that grows its state or its
# output log pays the same, in its own CPU time. Not part of the tests.
#
#   bench/first_touch.sh [DIR] [MIB]
set -euo pipefail
dir=${1:-/tmp}
mib=${2:-200}
file=$(mktemp "$dir/weir-first-touch.XXXXXX")
trap 'rm -f "$file"' EXIT
rm -f "$file"
pass() {
  local start end
  start=$(date +%s.%N)
  dd if=/dev/zero of="$file" bs=1M count="$mib" status=none
  end=$(date +%s.%N)
  rm -f "$file"
  awk -v mib="$mib" -v s="$start" -v e="$end" -v what="$1" \
    'BEGIN { printf "%s: %d MiB in %.3f s, %.0f MiB/s\n", what, mib, e - s, mib / (e - s) }'
}
grep -o 'page_reporting[^ ]*' /proc/cmdline || echo "no page_reporting option on the kernel's command line"
pass "first pass (pages not used lately)"
pass "second pass (the pages the first freed)"
