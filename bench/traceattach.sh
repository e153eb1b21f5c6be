#!/usr/bin/env bash
# How long culprit trace takes to set and remove probes on every function
# of a program (-f '*'), and how the program's time changes: REPS runs,
# each printing culprit's summary line. The figure in docs/performance.md
# is for sqlite3 3.40.1 built from Debian's source with -g:
#
#   apt-get source sqlite3 && cd sqlite3-3.40.1 && mkdir bld && cd bld &&
#   ../configure --disable-tcl && make sqlite3.c shell.c &&
#   gcc -O2 -g -fno-inline -DSQLITE_THREADSAFE=0 -o sqlite3-g shell.c sqlite3.c -lm
#
#   bench/traceattach.sh BINARY [REPS] -- ARGS...
set -euo pipefail
bin=$1
reps=${2:-5}
shift 2
[ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/trace
mkdir -p "$out"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit)
echo "functions with symbols: $(nm "$bin" | grep -c ' [tT] ')"
for _ in $(seq "$reps"); do
	t0=$(date +%s%N)
	"$bin" "$@" >/dev/null
	t1=$(date +%s%N)
	"$out/culprit" trace -f '*' -o "$out/all.rec" -- "$bin" "$@" 2>&1 >/dev/null | tail -1
	t2=$(date +%s%N)
	echo "  untraced $(((t1 - t0) / 1000000)) ms, traced $(((t2 - t1) / 1000000)) ms"
done
echo "$(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
