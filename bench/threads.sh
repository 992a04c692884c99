#!/bin/sh
# Issue 15's 4-thread goal (bench/results/threads.md): one replay thread per
# original thread, stack, heap and lateness per thread.
#
#   bench/threads.sh [BUILD] [REPEAT] [PROFILE]
#
# Two traces: the fixture of tests/test_threads.c (hand-made, 4 threads), and
# a recording (`memstub record --thread all`, made now) of tests/record/threads.c
# (threads with different stack depths and heaps, two cross-thread frees, one
# of them after the allocating thread ended, joins). PROFILE defaults to
# bench/results/host.profile.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"  # paths in the page relative to the source tree
build=${1:-build}
repeat=${2:-5}
profile=${3:-bench/results/host.profile}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=bench/results/threads.md

"$build/bench/bench_threads" --repeat "$repeat" --profile "$profile" --out "$tmp/fixture.md"
"$build/bench/bench_threads" --repeat "$repeat" --profile "$profile" --stagger 300000 \
  --out "$tmp/stagger.md"
{
  echo "<!-- bench/threads.sh $* -->"
  cat "$tmp/fixture.md"
  echo
  echo "## The fixture, threads staggered"
  echo
  sed '1,2d' "$tmp/stagger.md"
  echo
} > "$tmp/all.md"

prog=$build/tests/rec_threads  # tests/record/threads.c, as the tests build it
if [ -x "$prog" ]; then
  "$build/memstub" record --thread all -o "$tmp/recorded.csv" -- "$prog" 2> "$tmp/record.txt"
  "$build/bench/bench_threads" --repeat "$repeat" --profile "$profile" --time-scale 1 \
    --trace "$tmp/recorded.csv" --out "$tmp/recorded.md"
  {
    echo "## Recorded now: tests/record/threads.c under this memstub's \`record --thread all\`"
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
  echo "No recording: $prog is not built (cmake --build $build)." >> "$tmp/all.md"
fi
cp "$tmp/all.md" "$out"
echo "bench/threads.sh: wrote $out"
