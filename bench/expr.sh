#!/usr/bin/env bash
# Wall-time overhead of sampling expressions (--expr) at the default 999 Hz
# on a CPU-bound program (testdata/targets/jobs.c with its jobs on the heap,
# processed through a pointer), for both collectors, and of --jitter, RUNS
# times interleaved; medians and ratios. With the perf collector the
# expressions need culprit's BPF program, which copies the global and the
# heap jobs at each sample.
#
#   bench/expr.sh [RUNS]
set -euo pipefail
runs=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -o "$out/jobs" "$root/testdata/targets/jobs.c"
work=("$out/jobs" 400 heap)
exprs=(--expr 'jobs@process@j->size' --expr 'jobs@process@j->next->size' --expr 'jobs@process@cfg.limits[2]')
order=(bare perf perf-expr perf-jitter ptrace ptrace-expr)
declare -A times
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		t0=$(date +%s.%N)
		case $name in
		bare) "${work[@]}" ;;
		perf) "$out/culprit" record -o "$out/e.rec" -- "${work[@]}" 2>/dev/null ;;
		perf-expr) "$out/culprit" record "${exprs[@]}" -o "$out/e.rec" -- "${work[@]}" 2>/dev/null ;;
		perf-jitter) "$out/culprit" record --jitter 20 -o "$out/e.rec" -- "${work[@]}" 2>/dev/null ;;
		ptrace) "$out/culprit" record --collector ptrace -o "$out/e.rec" -- "${work[@]}" 2>/dev/null ;;
		ptrace-expr) "$out/culprit" record --collector ptrace "${exprs[@]}" -o "$out/e.rec" -- "${work[@]}" 2>/dev/null ;;
		esac
		t1=$(date +%s.%N)
		times[$name]+="$(echo "$t1 - $t0" | bc) "
	done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${times[bare]}" | median)
printf "%-12s %10s %10s\n" config "median s" "vs bare"
for name in "${order[@]}"; do
	m=$(echo "${times[$name]}" | median)
	printf "%-12s %10.3f %+9.1f%%\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)"
done
