#!/usr/bin/env bash
# bench/neighbours/fit_share.sh: learn a component's memory share from runs
# beside the standard neighbours (issue 32 item 2; docs/runtime.md, "Work as
# work"), and put it, with the figures it was fitted from, in its trace's
# metadata, where memstub replay reads it.
#
#   bench/neighbours/fit_share.sh BUILD_DIR TRACE [PAIRS] -- PROGRAM ARGS...
#
# PAIRS times (default 5), in a rotating order: PROGRAM alone, beside stream
# (256 MiB, on the other CPU) and beside alu, each pinned to CPU 0 and
# observed from outside (bench/real/observe.c: user + system CPU time, which
# a core waiting for memory spends and a core given to someone else does
# not); and touch_probe (the work's own memory touches) alone and beside
# stream. Then, from the medians:
#   slow_stream = CPU beside stream / alone, slow_alu = beside alu / alone,
#   touch_slowdown k = a 64 MiB touch beside stream / alone,
#   work_mem_share = (slow_stream - slow_alu) / (k - 1), within [0, 1]:
# the share of the work that, slowed as the stub's touches are, slows the
# stub beside stream as much more than beside alu as the component.
# Writes into TRACE (replaced atomically, other lines kept): work_mem_share
# and work.fit_pairs, work.fit_slow_stream, work.fit_slow_alu,
# work.fit_touch_slowdown (docs/formats.md, "Metadata of the work model").
# Refuses (exit 1, TRACE unchanged) when the touches do not slow beside
# stream here (k below 1.02): nothing can be learnt from them then.
# Needs two CPUs; the neighbours run only while PROGRAM or the probe does.
set -euo pipefail
B=$(cd "${1:?usage: fit_share.sh BUILD_DIR TRACE [PAIRS] -- PROGRAM ARGS...}" && pwd)
TRACE=${2:?usage: fit_share.sh BUILD_DIR TRACE [PAIRS] -- PROGRAM ARGS...}
shift 2
N=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then N=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
[ $# -gt 0 ] || { echo "fit_share.sh: no PROGRAM after --" >&2; exit 2; }
[ -f "$TRACE" ] || { echo "fit_share.sh: $TRACE: no such trace" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
NB="$B/bench/neighbours"
for f in "$NB/stream" "$NB/alu" "$NB/touch_probe"; do
  [ -x "$f" ] || { echo "fit_share.sh: missing $f: build first (cmake --build $B)" >&2; exit 2; }
done
tmp=$(mktemp -d)
npid=""
cleanup() { [ -n "$npid" ] && kill "$npid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cc -O2 -o "$tmp/observe" "$HERE/../real/observe.c"

# Start neighbour $1 (none, stream, alu) on CPU 1.
start() {
  npid=""
  case $1 in
    stream) taskset -c 1 "$NB/stream" 256 >/dev/null & npid=$! ;;
    alu) taskset -c 1 "$NB/alu" >/dev/null & npid=$! ;;
  esac
  if [ -n "$npid" ]; then sleep 0.3; fi  # stream has written its buffer
}
stop() {
  if [ -n "$npid" ]; then kill "$npid" 2>/dev/null || true; wait "$npid" 2>/dev/null || true; fi
  npid=""
}
# PROGRAM's CPU ns (user + system) on CPU 0.
cpu_of() {
  local line
  line=$(taskset -c 0 "$tmp/observe" -- "$@")
  echo "$line" | tr ' ' '\n' | awk -F= '$1=="user_ns"{u=$2} $1=="sys_ns"{s=$2} END{print u+s}'
}
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

conds=(alone stream alu)
for ((i = 0; i < N; i++)); do
  for ((j = 0; j < 3; j++)); do
    c=${conds[$(((i + j) % 3))]}
    start "$c"
    cpu_of "$@" >>"$tmp/$c"
    [ "$c" = alu ] || taskset -c 0 "$NB/touch_probe" | awk '{print $5}' >>"$tmp/touch_$c"
    stop
  done
  echo "fit_share.sh: pair $((i + 1)) of $N" >&2
done
a=$(median <"$tmp/alone")
s=$(median <"$tmp/stream")
l=$(median <"$tmp/alu")
ta=$(median <"$tmp/touch_alone")
ts=$(median <"$tmp/touch_stream")
read -r ss sa k share < <(awk -v a="$a" -v s="$s" -v l="$l" -v ta="$ta" -v ts="$ts" 'BEGIN{
  ss = s / a; sa = l / a; k = ts / ta
  sh = k > 1.02 ? (ss - sa) / (k - 1) : -1
  if (k > 1.02) { if (sh < 0) sh = 0; if (sh > 1) sh = 1 }
  printf "%.4f %.4f %.4f %.4f\n", ss, sa, k, sh }')
printf 'fit_share.sh: CPU medians alone %.3f s, beside stream %.3f s (x%s), beside alu %.3f s (x%s); a 64 MiB touch %s ns alone, %s ns beside stream (x%s)\n' \
  "$(awk -v v="$a" 'BEGIN{print v/1e9}')" "$(awk -v v="$s" 'BEGIN{print v/1e9}')" "$ss" \
  "$(awk -v v="$l" 'BEGIN{print v/1e9}')" "$sa" "$ta" "$ts" "$k" >&2
if awk -v k="$k" 'BEGIN{exit !(k <= 1.02)}'; then
  echo "fit_share.sh: the work's touches do not slow beside stream here (x$k): no share learnt, $TRACE unchanged" >&2
  exit 1
fi
# The metadata: after the format line, the old work_mem_share and work.fit_* left out.
skip=0
case $(head -n 1 "$TRACE") in "# memstub-trace"*) skip=1 ;; esac
{
  head -n "$skip" "$TRACE"
  printf '# work_mem_share: %s\n# work.fit_pairs: %s\n# work.fit_slow_stream: %s\n# work.fit_slow_alu: %s\n# work.fit_touch_slowdown: %s\n' \
    "$share" "$N" "$ss" "$sa" "$k"
  tail -n +$((skip + 1)) "$TRACE" | grep -v -E '^# (work_mem_share|work\.fit_[a-z_]+):' || true
} >"$TRACE.fit.tmp"
mv "$TRACE.fit.tmp" "$TRACE"
echo "fit_share.sh: $TRACE: work_mem_share $share" >&2
