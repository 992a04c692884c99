#!/usr/bin/env bash
# bench/record_compare.sh: the recorder's overhead in two builds, side by side
# (issue 14 item 6: recording more must not make it slower).
#
#   bench/record_compare.sh OLD_BUILD NEW_BUILD [REPEATS] [PROGRAM ARGS...]
#
# Runs PROGRAM (default: NEW_BUILD/bench/record_alloc 16 0, about 30 M
# allocator calls) natively and under each build's `memstub record` (its
# defaults), REPEATS times (default 7), interleaved, and prints the median
# wall and user CPU time of each, and each recorder's ratio to native. User
# CPU is the steadier figure on a shared machine; wall time is what
# bench/results/record-overhead.md reports.
set -euo pipefail
A=$(cd "${1:?usage: record_compare.sh OLD_BUILD NEW_BUILD [REPEATS] [PROGRAM ARGS...]}" && pwd)
B=$(cd "${2:?usage: record_compare.sh OLD_BUILD NEW_BUILD [REPEATS] [PROGRAM ARGS...]}" && pwd)
R=${3:-7}
shift $(($# < 3 ? $# : 3))
PROG=("$@")
[ ${#PROG[@]} -gt 0 ] || PROG=("$B/bench/record_alloc" 16 0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "wall user" of a command, in seconds (GNU time's format, its output discarded).
run() { /usr/bin/time -f "%e %U" -o "$tmp/t" "$@" >/dev/null 2>&1 || true; cat "$tmp/t"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$R"); do
  run "${PROG[@]}" >>"$tmp/native"
  run "$A/memstub" record -q -o "$tmp/a.csv" -- "${PROG[@]}" >>"$tmp/old"
  run "$B/memstub" record -q -o "$tmp/b.csv" -- "${PROG[@]}" >>"$tmp/new"
done
nw=$(cut -d' ' -f1 "$tmp/native" | median)
nu=$(cut -d' ' -f2 "$tmp/native" | median)
echo "program: ${PROG[*]} ($R repeats, medians)"
printf '%-8s %8s %8s %10s %10s\n' run wall_s user_s wall_ratio user_ratio
for k in native old new; do
  w=$(cut -d' ' -f1 "$tmp/$k" | median)
  u=$(cut -d' ' -f2 "$tmp/$k" | median)
  printf '%-8s %8s %8s %10s %10s\n' "$k" "$w" "$u" "$(awk -v a="$w" -v b="$nw" 'BEGIN {printf "%.2fx", a / b}')" \
    "$(awk -v a="$u" -v b="$nu" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')"
done
for k in a b; do
  printf '%s: %s\n' "$([ $k = a ] && echo old || echo new)" \
    "$(grep -E '^# record.cost_ns_per_event' "$tmp/$k.csv" | sed 's/^# //')"
done
