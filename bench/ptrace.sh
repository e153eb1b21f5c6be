#!/usr/bin/env bash
# Cost of the ptrace collector (culprit record --collector ptrace):
#  1. per sample, as the collector sees it: from the stop being reported to
#     the thread being resumed (registers, stack, unwinding, writing), the
#     median and p99 culprit prints at the end of a recording;
#  2. per sample, as the target sees it: how long a thread that spins on
#     clock_gettime stops at each sample (gaps > 20 µs; the bare run shows
#     the VM's own gaps);
#  3. a tracer-driven cycle, PTRACE_INTERRUPT → wait → registers → 32 KiB of
#     stack → unwind → PTRACE_CONT (go test -run TestSampleCost);
#  4. the wall-time overhead at the default rate (999 Hz) on a CPU-bound
#     program, RUNS runs interleaved with bare and perf-collector runs.
# Needs root and gcc.
#
#   bench/ptrace.sh [RUNS]
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -o "$out/hier" "$root/testdata/targets/hier.c"
cat >"$out/gaps.c" <<'EOF'
/* Spins for argv[1] seconds reading CLOCK_MONOTONIC; prints the gaps
 * longer than 20 µs: the times the thread did not run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static int cmp(const void *a, const void *b) { long long x = *(const long long *)a, y = *(const long long *)b; return x < y ? -1 : x > y; }
static long long g[1 << 20];
int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3;
	long long end = now() + (long long)(secs * 1e9), prev = now(), tot = 0;
	int n = 0;
	for (;;) {
		long long t = now();
		if (t - prev > 20000 && n < (1 << 20)) g[n++] = t - prev;
		prev = t;
		if (t > end) break;
	}
	qsort(g, n, sizeof g[0], cmp);
	for (int i = 0; i < n; i++) tot += g[i];
	if (n) fprintf(stderr, "gaps > 20 us: %d, median %.1f us, p90 %.1f us, p99 %.1f us, total %.1f ms\n",
		n, g[n / 2] / 1e3, g[n * 9 / 10] / 1e3, g[n * 99 / 100] / 1e3, tot / 1e6);
	else fprintf(stderr, "gaps > 20 us: 0\n");
	return 0;
}
EOF
gcc -O2 -o "$out/gaps" "$out/gaps.c"

echo "== stops seen by the target (3 s of a spinning thread)"
printf "bare:   "; "$out/gaps" 3
printf "ptrace: "; "$out/culprit" record --collector ptrace -o "$out/ptrace-gaps.rec" -- "$out/gaps" 3 2>&1 | sed -n '1p;$p' | paste -sd' '

echo
echo "== tracer-driven cycle"
(cd "$root" && go test -count=1 -run 'TestSampleCost$' -v ./internal/ptracer | grep -E 'cycle|recording:' | sed 's/^ *ptracer_test.go:[0-9]*: //')

echo
echo "== wall time, hier 80 at 999 Hz ($runs runs)"
work=("$out/hier" 80)
declare -A cmds=(
	[bare]=""
	[ptrace]="$out/culprit record --collector ptrace -o $out/ptrace.rec --"
	[perf]="$out/culprit record -o $out/perf-fp.rec --"
)
order=(bare ptrace perf)
declare -A times
declare -A costs
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		t0=$(date +%s.%N)
		${cmds[$name]} "${work[@]}" >/dev/null 2>"$out/stderr.txt"
		t1=$(date +%s.%N)
		times[$name]+="$(echo "$t1 - $t0" | bc) "
		if [ "$name" = ptrace ]; then
			costs[median]+="$(sed -n 's/.*: \([0-9.]*\) µs median.*/\1/p' "$out/stderr.txt") "
			costs[p99]+="$(sed -n 's/.*median, \([0-9.]*\) µs p99.*/\1/p' "$out/stderr.txt") "
		fi
	done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(echo "${times[bare]}" | median)
samples=$("$out/culprit" report --format json "$out/ptrace.rec" 2>/dev/null | grep -m1 '"samples"' | tr -dc 0-9)
printf "%-8s %10s %10s\n" config "median s" "vs bare"
for name in "${order[@]}"; do
	m=$(echo "${times[$name]}" | median)
	printf "%-8s %10.3f %+9.1f%%\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)"
done
m=$(echo "${times[ptrace]}" | median)
printf "\nptrace: %s samples in the last run; wall time added per sample %.1f µs\n" "$samples" "$(echo "($m - $base) * 1000000 / $samples" | bc -l)"
printf "ptrace: collector time per sample, median of the runs' medians %s µs, of their p99s %s µs\n" \
	"$(echo "${costs[median]}" | median)" "$(echo "${costs[p99]}" | median)"
