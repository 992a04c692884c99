#!/usr/bin/env bash
# bench/record_sites.sh: what `memstub record --sites` costs (issue 16 item 12).
#
#   bench/record_sites.sh BUILD_DIR [REPEATS] [INTERVAL...]
#
# record_alloc 16 0 (about 30 M allocator calls, the allocator alone) and
# record_alloc 16 40 (work per node), recorded without --sites and with
# --sites-every for each INTERVAL (default 65536 and 4096), repeats
# interleaved. Per configuration: the median wall time, and the recorder's own
# bookkeeping per allocator call (record.cost_ns_per_event in the trace's
# metadata: the hooks' work around the real call, sites included), with the
# sampled allocations. Prints a Markdown table; timings on a shared machine
# are noisy: rerun on a quiet one.
set -euo pipefail
B=$(cd "${1:?usage: record_sites.sh BUILD_DIR [REPEATS] [INTERVAL...]}" && pwd)
R=${2:-5}
shift $(($# >= 2 ? 2 : $#))
INTERVALS=${*:-65536 4096}
MEMSTUB="$B/memstub"
ALLOC="$B/bench/record_alloc"
for f in "$MEMSTUB" "$ALLOC"; do
  [ -e "$f" ] || { echo "missing $f: build first (cmake --build $B)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

CONFIGS="off"
for i in $INTERVALS; do CONFIGS+=" $i"; done
declare -A WALL COST SAMPLED
for work in 0 40; do
  for ((r = 1; r <= R; r++)); do
    for c in $CONFIGS; do
      opt=()
      [ "$c" = off ] || opt=(--sites-every "$c")
      s=$(date +%s%N)
      "$MEMSTUB" record -q "${opt[@]}" -o "$tmp/t.csv" -- "$ALLOC" 16 "$work" >/dev/null 2>&1
      e=$(date +%s%N)
      WALL[$work.$c]+="$(((e - s) / 1000)) "
      COST[$work.$c]+="$(sed -n 's/^# record.cost_ns_per_event: //p' "$tmp/t.csv") "
      SAMPLED[$work.$c]=$(sed -n 's/^# sites.sampled: //p' "$tmp/t.csv")
    done
  done
  echo "work $work done" >&2
done
echo "Host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $R repeats, medians."
echo
echo "| program | --sites | wall (s) | ns per allocator call (recorder's own) | sampled allocations |"
echo "|---|---|---:|---:|---:|"
for work in 0 40; do
  for c in $CONFIGS; do
    w=$(echo ${WALL[$work.$c]} | tr ' ' '\n' | median)
    k=$(echo ${COST[$work.$c]} | tr ' ' '\n' | median)
    label=$([ "$c" = off ] && echo "off" || echo "--sites-every $c")
    echo "| record_alloc 16 $work | $label | $(awk -v w="$w" 'BEGIN {printf "%.3f", w / 1e6}') | $k | ${SAMPLED[$work.$c]:--} |"
  done
done
