#!/usr/bin/env bash
# Wall-time overhead of vProf value sampling (record --values) at the default
# 999 Hz on a CPU-bound program with about 1000 variables worth watching
# (bench/genwide: FUNCS functions (default 140) with 2 parameters and 8 locals each, 100
# global counters), RUNS times interleaved; medians and ratios against the
# bare run and against plain recording.
#
#   bench/values.sh [RUNS]
#
# Needs root.
set -euo pipefail
runs=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
go run "$root/bench/genwide" -funcs "${FUNCS:-140}" -globals 100 >"$out/wide.c"
gcc -O2 -g -o "$out/wide" "$out/wide.c"
work=("$out/wide" 600)
if "$out/culprit" schema "$out/wide" -o "$out/wide.schema" 2>/dev/null; then
	echo "schema: $(grep -vc '^#' "$out/wide.schema") variables"
fi
order=(bare record values)
declare -A times
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		t0=$(date +%s.%N)
		case $name in
		bare) "${work[@]}" || true ;;
		record) "$out/culprit" record -o "$out/v.rec" -- "${work[@]}" 2>/dev/null || true ;;
		values) "$out/culprit" record --values -o "$out/v.rec" -- "${work[@]}" 2>/dev/null || true ;;
		esac
		t1=$(date +%s.%N)
		times[$name]+="$(echo "$t1 - $t0" | bc) "
	done
done
"$out/culprit" report --exprs --format json "$out/v.rec" >"$out/v.json" 2>/dev/null || true
echo "last --values recording: $(stat -c %s "$out/v.rec") bytes"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${times[bare]}" | median)
plain=$(echo "${times[record]}" | median)
printf "%-8s %10s %10s %12s\n" config "median s" "vs bare" "vs record"
for name in "${order[@]}"; do
	m=$(echo "${times[$name]}" | median)
	printf "%-8s %10.3f %+9.1f%% %+11.1f%%\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)" "$(echo "($m / $plain - 1) * 100" | bc -l)"
done
