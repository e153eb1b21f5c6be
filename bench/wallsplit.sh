#!/usr/bin/env bash
# Where the wall-time overhead of recording lies: the overhead workload
# (testdata/targets/hier.c through bench/wallsplit/timed.c) run bare, under
# culprit record (fp and dwarf) and under perf record -g at the same
# frequency, RUNS times interleaved. For each, the medians (and ranges) of the
# time from fork to the workload's main (the recorder's start), in main (the
# per-sample cost) and from the end of main to the recorder's exit. Needs
# root, gcc and perf.
#
#   bench/wallsplit.sh [RUNS] [ROUNDS] [FREQ] [cold|warm]
#
# CONFIGS="culprit-fp" runs only bare and those configurations.
#
# When no task-bound perf event has existed for about a second, the kernel
# turns its scheduler hooks off, and the next one to be opened waits for an
# RCU grace period (8–30 ms here), unless another program on the machine
# keeps perf events open. By default the configs simply alternate (culprit fp
# follows bare: cold; dwarf follows fp: warm). With "cold", each recorded run
# waits 1.2 s first; with "warm", it follows a run of the same config on an
# empty workload (0 rounds).
set -euo pipefail
runs=${1:-9}
rounds=${2:-80}
freq=${3:-999}
mode=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -fno-omit-frame-pointer -o "$out/timed" "$root/bench/wallsplit/timed.c"
gcc -O2 -o "$out/launch" "$root/bench/wallsplit/launch.c"
timing=$out/wallsplit.times

declare -A cmds=(
	[bare]=""
	[culprit-fp]="$out/culprit record -F $freq --call-graph fp -o $out/wallsplit-fp.rec --"
	[culprit-dwarf]="$out/culprit record -F $freq --call-graph dwarf -o $out/wallsplit-dwarf.rec --"
	[perf-fp]="perf record -q -F $freq -e cpu-clock -g -o $out/wallsplit-perf.data --"
)
order=(bare culprit-fp culprit-dwarf perf-fp)
if [[ -n ${CONFIGS:-} ]]; then
	order=(bare)
	for c in $CONFIGS; do
		[[ $c == bare ]] && continue
		[[ -n ${cmds[$c]+set} ]] || { echo "unknown config $c (one of ${!cmds[*]})" >&2; exit 2; }
		order+=("$c")
	done
fi
declare -A pre mid post tot
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		if [[ $name != bare ]]; then
			case $mode in
			cold) sleep 1.2 ;;
			warm) WALLSPLIT_OUT=$timing "$out/launch" "$timing" ${cmds[$name]} "$out/timed" 0 >/dev/null ;;
			esac
		fi
		read -r a b c d < <(WALLSPLIT_OUT=$timing "$out/launch" "$timing" ${cmds[$name]} "$out/timed" "$rounds")
		pre[$name]+="$a " mid[$name]+="$b " post[$name]+="$c " tot[$name]+="$d "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.1f–%.1f", lo, hi}'; }
printf "%-14s %22s %24s %22s %24s\n" "config (ms)" "before main" "main" "after main" "total"
for name in "${order[@]}"; do
	printf "%-14s %7.2f (%12s) %9.1f (%12s) %7.2f (%12s) %9.1f (%12s)\n" "$name" \
		"$(echo "${pre[$name]}" | median)" "$(echo "${pre[$name]}" | range)" \
		"$(echo "${mid[$name]}" | median)" "$(echo "${mid[$name]}" | range)" \
		"$(echo "${post[$name]}" | median)" "$(echo "${post[$name]}" | range)" \
		"$(echo "${tot[$name]}" | median)" "$(echo "${tot[$name]}" | range)"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
