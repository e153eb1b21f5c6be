#!/usr/bin/env bash
# What each sample costs the sampled thread, on a real recording: a thread
# spinning on the time-stamp counter (bench/samplegaps/spin/spin.c) logs every
# interruption of its loop; bench/samplegaps matches them with the sample
# times of the recording and charges each sample the interruption holding it.
# Run bare, under culprit record (fp, dwarf), perf record -g and perf record
# without call chains (perf-ip: the timer interrupt and little else) at FREQ,
# RUNS times interleaved, SECS seconds each. Unlike whole-run timings, which
# this VM's drift blurs by ±1%, the per-sample figure is steady to a few
# percent. Needs root, gcc and perf.
#
#   bench/samplegaps.sh [RUNS] [SECS] [FREQ]
#
# CONFIGS="culprit-fp perf-fp" runs only those (bare always runs;
# culprit-thread is culprit fp with --per-thread-clock, the threads' own
# cpu-clock events instead of the per-CPU ones);
# STACKS="512 4096" adds culprit fp with those --stack-size values
# (culprit-fp-512, ...); a configuration named culprit-fp,ARG,ARG... is
# culprit fp with those arguments (commas for spaces), e.g.
# CONFIGS="culprit-fp culprit-fp,--mmap-pages,128".
#
# Columns (medians over the runs): per-sample p50 and mean (µs), the
# samples' share of the thread's time (mean × samples / run), and the time in
# interruptions that hold no sample (the VM's own, present in bare runs too).
set -euo pipefail
runs=${1:-5}
secs=${2:-3}
freq=${3:-999}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
go build -o "$out/samplegaps" "$root/bench/samplegaps"
gcc -O2 -fno-omit-frame-pointer -o "$out/spin" "$root/bench/samplegaps/spin/spin.c" # as the overhead workload: culprit copies 1 KiB of stack for it
gaps=$out/samplegaps.gaps

declare -A cmds=(
	[bare]=""
	[culprit-fp]="$out/culprit record -F $freq --call-graph fp -o $out/samplegaps-fp.rec --"
	[culprit-thread]="$out/culprit record -F $freq --call-graph fp --per-thread-clock -o $out/samplegaps-fp.rec --"
	[culprit-dwarf]="$out/culprit record -F $freq --call-graph dwarf -o $out/samplegaps-dwarf.rec --"
	[perf-fp]="perf record -q -k CLOCK_MONOTONIC -F $freq -e cpu-clock -g -o $out/samplegaps-perf.data --"
	[perf-ip]="perf record -q -k CLOCK_MONOTONIC -F $freq -e cpu-clock -o $out/samplegaps-perf.data --"
)
order=(bare ${CONFIGS:-culprit-fp culprit-dwarf perf-fp perf-ip})
for n in ${STACKS:-}; do
	cmds[culprit-fp-$n]="$out/culprit record -F $freq --call-graph fp --stack-size $n -o $out/samplegaps-fp.rec --"
	order+=("culprit-fp-$n")
done
for name in "${order[@]}"; do
	if [[ $name == culprit-fp,* && -z ${cmds[$name]+set} ]]; then
		extra=${name#culprit-fp,}
		cmds[$name]="$out/culprit record -F $freq --call-graph fp ${extra//,/ } -o $out/samplegaps-fp.rec --"
	fi
	[[ -n ${cmds[$name]+set} ]] || { echo "unknown config $name (one of ${!cmds[*]})" >&2; exit 2; }
done
declare -A p50 mean share other
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < runs; i++)); do
	for name in "${order[@]}"; do
		${cmds[$name]} "$out/spin" "$secs" "$gaps" >/dev/null 2>&1
		case $name in
		bare) line=$("$out/samplegaps" "$gaps") ;;
		culprit-fp | culprit-fp-* | culprit-fp,* | culprit-thread) line=$("$out/samplegaps" "$gaps" "$out/samplegaps-fp.rec") ;;
		culprit-dwarf) line=$("$out/samplegaps" "$gaps" "$out/samplegaps-dwarf.rec") ;;
		perf-*)
			perf script -i "$out/samplegaps-perf.data" -F time --ns 2>/dev/null >"$out/samplegaps-perf.times"
			line=$("$out/samplegaps" "$gaps" "$out/samplegaps-perf.times")
			;;
		esac
		read -r _ n _ _ _ a _ b _ s _ _ _ o <<<"$line"
		p50[$name]+="$a " mean[$name]+="$b " other[$name]+="$o "
		share[$name]+="$(echo "$s / ($secs * 10)" | bc -l) "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf "%-36s %12s %13s %14s %16s\n" config "p50 µs" "mean µs" "samples' %" "other gaps ms"
for name in "${order[@]}"; do
	if [[ $name == bare ]]; then
		printf "%-36s %12s %13s %14s %16.1f\n" "$name" - - - "$(echo "${other[$name]}" | median)"
		continue
	fi
	printf "%-36s %12.2f %13.2f %13.2f%% %16.1f\n" "$name" "$(echo "${p50[$name]}" | median)" \
		"$(echo "${mean[$name]}" | median)" "$(echo "${share[$name]}" | median)" "$(echo "${other[$name]}" | median)"
done
echo "load: $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
