#!/bin/sh
# bench/record_function.sh [BUILD_DIR] [REPEATS]: what `memstub record
# --function` adds to each call of the named function. An empty function
# (fnprog tiny) is called 200,000 times: natively, under `memstub record`,
# and under `memstub record --function tiny`; ns per call, median [min, max]
# over REPEATS interleaved runs. Writes bench/results/record-function.md.
set -eu
B=${1:-build}
R=${2:-7}
P=$B/tests/fnprog
M=$B/memstub
[ -x "$P" ] && [ -x "$M" ] || { echo "build first: $P, $M" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for i in $(seq "$R"); do
  "$P" tiny 200000 2>&1 >/dev/null | awk '{print $3}' >> "$T/native"
  "$M" record -q -o "$T/a.csv" -- "$P" tiny 200000 2>&1 >/dev/null | awk '{print $3}' >> "$T/recorded"
  "$M" record -q -o "$T/b.csv" --function tiny -- "$P" tiny 200000 2>&1 >/dev/null |
    awk '{print $3}' >> "$T/function"
done
stat() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%.1f [%.1f, %.1f]", v[int((NR+1)/2)], v[1], v[NR]}'; }
out=$(dirname "$0")/results/record-function.md
{
  echo "# --function: cost per call"
  echo
  echo "\`bench/record_function.sh $B $R\` on $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d)."
  echo "An empty function called 200,000 times; ns per call, median [min, max] of $R runs."
  echo
  echo "| run | ns per call |"
  echo "|---|---:|"
  echo "| native | $(stat "$T/native") |"
  echo "| \`memstub record\` | $(stat "$T/recorded") |"
  echo "| \`memstub record --function tiny\` | $(stat "$T/function") |"
} > "$out"
cat "$out"
