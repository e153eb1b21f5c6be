#!/usr/bin/env bash
# switchcost.sh [RUNS] [ROUNDS]: what a recorder costs each context switch of
# the program it records. bench/switchcost/pingpong makes ROUNDS (default
# 50,000) round trips of one byte over two pipes between two processes on
# CPU 0 (two context switches and four system calls each) and prints their
# CPU time per round trip; it runs bare, under `culprit record` (this
# tree's build, or $CULPRIT), under $BASE's `culprit record` when BASE names
# another build, and under `perf record -e dummy` (an inherited dummy event
# on the program's threads: the cost of a perf event on a thread that
# samples nothing), RUNS times (default 8) interleaved. $FLAGS are given to
# both culprit builds' `record` (e.g. "-F 1 --events cpu,syscalls,sched":
# no tick in the round trips, the events' programs at each switch and
# call). The table gives the median CPU ns per round trip and its
# difference from bare's. Needs root (culprit's per-CPU events), gcc, go
# and perf.
set -euo pipefail
runs=${1:-8}
rounds=${2:-50000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/bench/out/switchcost}
mkdir -p "$out"
gcc -O2 -o "$out/pingpong" "$root/bench/switchcost/pingpong.c"
culprit=${CULPRIT:-}
if [ -z "$culprit" ]; then
	culprit=$out/culprit
	(cd "$root" && go build -o "$culprit" ./cmd/culprit)
fi
declare -A cfg=(
	[bare]=""
	[culprit]="$culprit record -o $out/run.rec ${FLAGS:-} --"
	[perf-dummy]="perf record -q -e dummy -o $out/perf.data --"
)
order=(bare culprit)
if [ -n "${BASE:-}" ]; then
	cfg[culprit@base]="$BASE record -o $out/run.rec ${FLAGS:-} --"
	order+=(culprit@base)
fi
order+=(perf-dummy)
declare -A res
start="$(date -u +%H:%M), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < runs; r++)); do
	for k in "${order[@]}"; do
		# shellcheck disable=SC2086
		line=$(${cfg[$k]} "$out/pingpong" "$rounds" 2>"$out/err") || {
			echo "switchcost.sh: $k failed: $(tail -3 "$out/err")" >&2
			exit 1
		}
		res[$k]+="${line%% *}"$'\n'
	done
done
median() { sort -n | awk 'NF { v[++n] = $1 } END { print v[int((n + 1) / 2)] }'; }
base=$(printf '%s' "${res[bare]}" | median)
printf "pingpong, %d round trips, %d runs (%s)\nfrom %s to %s, load average %s\n" "$rounds" "$runs" "$(date -u +%F)" \
	"$start" "$(date -u +%H:%M)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "| configuration | CPU ns a round trip | vs bare |\n|---|---|---|\n"
for k in "${order[@]}"; do
	m=$(printf '%s' "${res[$k]}" | median)
	printf "| %s | %s | %+d ns (%+.1f%%) |\n" "$k" "$m" "$((m - base))" "$(awk -v a="$m" -v b="$base" 'BEGIN { print (a / b - 1) * 100 }')"
done
