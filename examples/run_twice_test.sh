#!/bin/sh
# Examples.SessionLate, Examples.JoinRekey: an example that checks itself (it exits 0 only if
# what it reads back is what it worked out by hand) run twice on one directory. The first run
# starts fresh. The second resumes from the first's checkpoint: it must read nothing, dead-letter
# nothing, and read back exactly what the first did (the topics gained nothing: exactly once).
#
#   run_twice_test.sh PROGRAM WORK_DIR     (outputs in WORK_DIR.first and WORK_DIR.second)
set -eu
bin=$1 dir=$2
name=$(basename "$bin")
rm -rf "$dir"

for run in first second; do
  status=0
  "$bin" "$dir" >"$dir.$run" || status=$?
  cat "$dir.$run"
  if [ "$status" != 0 ]; then
    echo "$name: the $run run failed (exit status $status)"
    exit 1
  fi
done

# The first line is the run's summary; the rest is what was read back.
if head -n 1 "$dir.first" | grep -q resumed; then
  echo "$name: the first run resumed, in an empty directory"
  exit 1
fi
nothing='0 records in, 0 dead letters (0 in user functions), 0 late'
summary="^$name: $nothing\( (OnLate called 0 times)\)\?, resumed from a checkpoint\$"
if ! head -n 1 "$dir.second" | grep -q "$summary"; then
  echo "$name: the second run's summary does not match: $summary"
  exit 1
fi
if [ "$(tail -n +2 "$dir.first")" != "$(tail -n +2 "$dir.second")" ]; then
  echo "$name: the second run read back something else than the first"
  exit 1
fi
echo "$name: ok twice"
