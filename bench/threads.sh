#!/bin/sh
# Issue 15's 4-thread goal (bench/results/threads.md): one replay thread per
# original thread, stack, heap and lateness per thread.
#
#   bench/threads.sh [BUILD] [REPEAT] [PROFILE]
#
# Two traces: the fixture of tests/test_threads.c (hand-made, 4 threads), and,
# when this memstub records every thread (`memstub record --thread all`) and
# tests/record/threads.c is there, a recording of that 4-thread program
# (threads with different stack depths and heaps, two cross-thread frees, one
# of them after the allocating thread ended, joins). PROFILE defaults to
# bench/results/host.profile.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
repeat=${2:-5}
profile=${3:-$src/bench/results/host.profile}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$src/bench/results/threads.md

"$build/bench/bench_threads" --repeat "$repeat" --profile "$profile" --out "$tmp/fixture.md"
{
  cat "$tmp/fixture.md"
  echo
} > "$tmp/all.md"

prog=$src/tests/record/threads.c
if [ -f "$prog" ] && "$build/memstub" record --help 2>&1 | grep -q -- '--thread main|N|all'; then
  cc -O2 -pthread "$prog" -o "$tmp/threads"
  "$build/memstub" record --thread all -o "$tmp/recorded.csv" -- "$tmp/threads" 2> "$tmp/record.txt"
  "$build/bench/bench_threads" --repeat "$repeat" --profile "$profile" --time-scale 1 \
    --trace "$tmp/recorded.csv" --out "$tmp/recorded.md"
  {
    echo "## Recorded: tests/record/threads.c under \`memstub record --thread all\`"
    echo
    echo "The recorder's summary:"
    echo
    echo '```'
    cat "$tmp/record.txt"
    echo '```'
    echo
    sed '1,2d' "$tmp/recorded.md"
  } >> "$tmp/all.md"
else
  echo "No recording: this memstub has no \`record --thread all\` or tests/record/threads.c is missing." >> "$tmp/all.md"
fi
cp "$tmp/all.md" "$out"
echo "bench/threads.sh: wrote $out"
