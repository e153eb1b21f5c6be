#!/usr/bin/env bash
# Wall-time overhead of recording a CPU-bound C workload: bare, under
# culprit record (fp and dwarf) and under perf record (-g and --call-graph
# dwarf) at the same frequency, RUNS times interleaved; prints medians and
# ratios to the bare run. Needs root, gcc and perf.
#
#   bench/overhead.sh [RUNS] [FREQ]
set -euo pipefail
runs=${1:-7}
freq=${2:-999}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -fno-omit-frame-pointer -o "$out/hier" "$root/testdata/targets/hier.c"
work=("$out/hier" 80)

declare -A cmds=(
	[bare]=""
	[culprit-fp]="$out/culprit record -F $freq --call-graph fp -o $out/culprit-fp.rec --"
	[culprit-dwarf]="$out/culprit record -F $freq --call-graph dwarf -o $out/culprit-dwarf.rec --"
	[perf-fp]="perf record -q -F $freq -e cpu-clock -g -o $out/perf-fp.data --"
	[perf-dwarf]="perf record -q -F $freq -e cpu-clock --call-graph dwarf -o $out/perf-dwarf.data --"
)
order=(bare culprit-fp perf-fp culprit-dwarf perf-dwarf)
declare -A times
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		t0=$(date +%s.%N)
		${cmds[$name]} "${work[@]}" >/dev/null 2>&1
		t1=$(date +%s.%N)
		times[$name]+="$(echo "$t1 - $t0" | bc) "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${times[bare]}" | median)
printf "%-14s %10s %10s\n" config "median s" "vs bare"
for name in "${order[@]}"; do
	m=$(echo "${times[$name]}" | median)
	printf "%-14s %10.3f %+9.1f%%\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)"
done
printf "\nfiles of the last run (bytes, samples, bytes per sample):\n"
for f in culprit-fp.rec culprit-dwarf.rec; do
	n=$("$out/culprit" report --format json "$out/$f" 2>/dev/null | grep -m1 '"samples"' | tr -dc 0-9)
	printf "%-18s %10s %7s %8.1f\n" "$f" "$(stat -c %s "$out/$f")" "$n" "$(echo "$(stat -c %s "$out/$f") / $n" | bc -l)"
done
for f in perf-fp.data perf-dwarf.data; do
	n=$(perf script -i "$out/$f" -F time 2>/dev/null | wc -l)
	printf "%-18s %10s %7s %8.1f\n" "$f" "$(stat -c %s "$out/$f")" "$n" "$(echo "$(stat -c %s "$out/$f") / $n" | bc -l)"
done
