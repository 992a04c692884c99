#!/bin/sh
# bench/work_churn.sh: a recorded program's work against its stub's (issue 14
# items 3 and 5): `memstub record` it (defaults), `memstub gen` (with -c
# PROFILE when given) + `memstub build`, one `stub --measure` run, then
# `memstub compare`'s work lines: CPU, allocator calls per kind and churn
# bytes, totals and per interval. The default program is bench/real/run's
# python3 workload (300k dicts dumped as JSON).
#
#   bench/work_churn.sh BUILD_DIR [PROFILE] [-- PROGRAM ARGS...]
#
# Writes nothing to the tree; its work directory is removed at the end
# (MEMSTUB_KEEP=1 keeps it and says where).
set -eu
build=${1:?usage: bench/work_churn.sh BUILD_DIR [PROFILE] [-- PROGRAM ARGS...]}
shift
profile=
if [ $# -gt 0 ] && [ "$1" != "--" ]; then profile=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
memstub=$build/memstub
dir=$(mktemp -d)
[ "${MEMSTUB_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
if [ $# -eq 0 ]; then
  set -- /usr/bin/python3 -c "import json,sys
d=[{'id':i,'name':'n%d'%i,'v':[i,i+1]} for i in range(300000)]
json.dump(d,sys.stdout)
"
fi
"$memstub" record -q -o "$dir/t.csv" -- "$@" > /dev/null
if [ -n "$profile" ]; then
  "$memstub" gen "$dir/t.csv" -o "$dir/t.h" -c "$profile" 2> /dev/null
else
  "$memstub" gen "$dir/t.csv" -o "$dir/t.h" 2> /dev/null
fi
"$memstub" build "$dir/t.h" -o "$dir/stub" > /dev/null 2>&1
"$dir/stub" --measure "$dir/r.csv" > /dev/null 2>&1
echo "# $(uname -srm), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
printf "# program: %s\n" "$1"
"$memstub" compare "$dir/t.csv" "$dir/r.csv" | sed -n '/^cpu /,$p'
[ "${MEMSTUB_KEEP:-0}" = 1 ] && echo "# kept: $dir"
exit 0
