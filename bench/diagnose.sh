#!/usr/bin/env bash
# Time and peak memory of culprit diagnose over N value samples (default 10M,
# half in a normal and half in a buggy recording).
#
# A real recording of testdata/targets/vprof_wrong.c (buggy run, two
# threads, -O2 -g) gives the CPU samples and stacks; bench/genvalues repeats
# them and writes, at each, the values of a synthetic schema (4 variables per
# function seen in the stacks, read at depths 0–3, and 16 globals) with
# realistic shapes, 3% of the variables changing shape in the buggy
# recording. culprit diagnose then compares the two, RUNS times (default 3).
#
#   bench/diagnose.sh [N] [RUNS]
#
# Needs root (for the seed recording), gcc and GNU time.
set -euo pipefail
n=${1:-10000000}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
go build -o "$out/genvalues" "$root/bench/genvalues"
gcc -O2 -g -pthread -o "$out/vprof_wrong" "$root/testdata/targets/vprof_wrong.c"
"$out/culprit" record -o "$out/vprof-seed.rec" -- "$out/vprof_wrong" buggy >/dev/null 2>&1
"$out/genvalues" -values "$n" "$out/vprof-seed.rec" "$out/vprof-normal.rec" "$out/vprof-buggy.rec"
printf "recordings: %s + %s bytes, %s value samples\n" "$(stat -c %s "$out/vprof-normal.rec")" "$(stat -c %s "$out/vprof-buggy.rec")" "$n"
for ((i = 0; i < runs; i++)); do
	/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak RSS" "$out/culprit" diagnose \
		--normal "$out/vprof-normal.rec" --buggy "$out/vprof-buggy.rec" >/dev/null 2>"$out/time.txt" || true
	echo "culprit diagnose: $(tail -1 "$out/time.txt")"
done
