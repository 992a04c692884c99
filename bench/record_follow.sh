#!/bin/sh
# bench/record_follow.sh [BUILD_DIR]: `memstub record --follow-children` on
# sh -c 'sort FILE; xz -c FILE' gives three traces (sh, sort, xz); each
# child's peaks are compared with `memstub record` of that program alone.
# Writes bench/results/record-follow.md.
set -eu
B=${1:-build}
M=$B/memstub
[ -x "$M" ] || { echo "build first: $M" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# 400,000 lines of hex (about 3.5 MB)
awk 'BEGIN { x = 12345; for (i = 0; i < 400000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%x\n", x } }' > "$T/in.txt"
"$M" record -q --follow-children -o "$T/sh.csv" -- sh -c "sort $T/in.txt > /dev/null; xz -c $T/in.txt > /dev/null"
"$M" record -q -o "$T/sort.csv" -- sort "$T/in.txt" > /dev/null
"$M" record -q -o "$T/xz.csv" -- xz -c "$T/in.txt" > /dev/null
meta() { sed -n "s/^# $2: //p" "$1"; }
row() {  # name, followed trace, alone trace
  for k in record.peak_heap_bytes record.peak_stack_bytes record.peak_rss_bytes; do
    printf ' %s / %s |' "$(meta "$2" $k)" "$(meta "$3" $k)"
  done
}
out=$(dirname "$0")/results/record-follow.md
{
  echo "# --follow-children: each child's trace against its own recording"
  echo
  echo "\`bench/record_follow.sh $B\` on $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d): \`memstub record --follow-children -- sh -c 'sort in.txt; xz -c in.txt'\` (400,000 hex lines), and each program recorded alone. Peaks in bytes, followed / alone."
  echo
  echo "| trace | peak heap | peak stack | peak rss |"
  echo "|---|---|---|---|"
  echo "| sh (root) | $(meta "$T/sh.csv" record.peak_heap_bytes) | $(meta "$T/sh.csv" record.peak_stack_bytes) | $(meta "$T/sh.csv" record.peak_rss_bytes) |"
  for p in sort xz; do
    f=$(ls "$T"/sh.*."$p".csv)
    echo "| $p ($(basename "$f")) |$(row $p "$f" "$T/$p.csv")"
  done
  echo
  echo "Traces: $(ls "$T" | grep -c '^sh') (the root and one per child)."
} > "$out"
cat "$out"
