#!/usr/bin/env bash
# Wall-time overhead of recording a CPU-bound C workload: bare, under
# culprit record (fp and dwarf) and under perf record (-g and --call-graph
# dwarf) at the same frequency, RUNS times interleaved; prints medians and
# ratios to the bare run, and the median of each run's ratio to the bare
# run of its round with a 95% confidence interval. Needs root, gcc and perf.
#
#   bench/overhead.sh [RUNS] [FREQ]
#
# ROUNDS=N sets the workload's length (80 rounds: about 2.3 s; the fixed
# costs of starting and ending weigh less on longer runs); CONFIGS="bare
# culprit-fp" runs only those configurations (bare is always first), for
# more runs of the comparison that matters in the same time.
# TARGET=libcalls records testdata/targets/libcalls.c at -O2 without frame
# pointers instead (time in Debian's libc, which keeps none: the case where
# fp mode's stacks need the stack copy; ROUNDS defaults to 6000, about 2 s);
# culprit-values is culprit-fp with --values; culprit-thread is culprit-fp
# with --per-thread-clock (cpu-clock events on the threads, not per CPU).
# A configuration named culprit-fp,ARG,ARG... is culprit-fp with the
# given arguments (commas for spaces), to measure one option's cost paired
# with the default: CONFIGS="culprit-fp culprit-fp,--stack-size,0".
# With $BASE naming another culprit binary (an older build), culprit-fp@base
# is culprit-fp recorded with it, to pair two builds in one run:
# CONFIGS="culprit-fp culprit-fp@base" DIFF="culprit-fp culprit-fp@base".
# CPUTIME=1 measures the workload's own CPU time (user + system, from
# its rusage at wait4, to the microsecond: bench/cputime; /usr/bin/time
# gives 10 ms ticks) instead of the wall time: what each sample's
# interrupt costs the sampled thread is charged to it (this kernel has no
# separate IRQ time accounting), and CPU time moves much less than wall
# time when other processes share the CPUs; the recorder's start and end,
# and its own CPU time, are left out of that figure and given in a column
# of their own (the whole command's CPU time less the workload's: the
# recorder's reading and writing, which runs on the other CPU).
#
# Resolving a point or two on this VM, whose speed drifts by ±5% over
# minutes: each round runs the configurations in the opposite order of
# the round before (bare first, then bare last), so a drift that is
# linear over two rounds weighs on bare and on each configuration alike;
# many short runs (ROUNDS small, 50-200 rounds) keep each pair's runs
# seconds apart. Next to the paired median and its sign-test interval,
# the table gives the paired mean with a 95% bootstrap interval (2000
# resamples of the rounds) and the paired ratios' standard deviation, so
# a run says itself whether it resolved what it was after (an interval
# narrower than the difference sought). DIFF="A B" also prints the
# paired difference of two configurations, A less B, per round over its
# bare run: with A culprit-fp and B culprit-fp,-F,99 (the same recorder
# sampling a tenth as often, its start and end alike), what 900 samples a
# second cost the workload, the recorder's fixed costs cancelled.
set -euo pipefail
runs=${1:-7}
freq=${2:-999}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
[[ -z ${CPUTIME:-} ]] || (cd "$root" && CGO_ENABLED=0 go build -o "$out/cputime" ./bench/cputime)
case ${TARGET:-hier} in
hier)
	gcc -O2 -g -fno-omit-frame-pointer -o "$out/hier" "$root/testdata/targets/hier.c"
	work=("$out/hier" "${ROUNDS:-80}")
	;;
libcalls)
	gcc -O2 -g -fomit-frame-pointer -o "$out/libcalls" "$root/testdata/targets/libcalls.c"
	work=("$out/libcalls" "${ROUNDS:-6000}")
	;;
*)
	echo "unknown TARGET $TARGET (hier or libcalls)" >&2
	exit 2
	;;
esac

declare -A cmds=(
	[bare]=""
	[culprit-fp]="$out/culprit record -F $freq --call-graph fp -o $out/culprit-fp.rec --"
	[culprit-thread]="$out/culprit record -F $freq --call-graph fp --per-thread-clock -o $out/culprit-thread.rec --"
	[culprit-values]="$out/culprit record -F $freq --values -o $out/culprit-values.rec --"
	[culprit-dwarf]="$out/culprit record -F $freq --call-graph dwarf -o $out/culprit-dwarf.rec --"
	[perf-fp]="perf record -q -F $freq -e cpu-clock -g -o $out/perf-fp.data --"
	[perf-dwarf]="perf record -q -F $freq -e cpu-clock --call-graph dwarf -o $out/perf-dwarf.data --"
)
if [[ -n ${BASE:-} ]]; then
	cmds[culprit-fp@base]="$BASE record -F $freq --call-graph fp -o $out/culprit-base.rec --"
fi
order=(bare culprit-fp perf-fp culprit-dwarf perf-dwarf)
if [[ -n ${CONFIGS:-} ]]; then
	order=(bare)
	for c in $CONFIGS; do
		[[ $c == bare ]] && continue
		if [[ $c == culprit-fp,* && -z ${cmds[$c]+set} ]]; then
			extra=${c#culprit-fp,}
			cmds[$c]="$out/culprit record -F $freq --call-graph fp ${extra//,/ } -o $out/culprit-extra.rec --"
		fi
		[[ -n ${cmds[$c]+set} ]] || { echo "unknown config $c (one of ${!cmds[*]})" >&2; exit 2; }
		order+=("$c")
	done
fi
declare -A times own
load0=$(cut -d" " -f1-3 /proc/loadavg)
for ((i = 0; i < runs; i++)); do
	round=("${order[@]}")
	if ((i % 2)); then
		round=()
		for ((j = ${#order[@]} - 1; j >= 0; j--)); do round+=("${order[j]}"); done
	fi
	for name in "${round[@]}"; do
		if [[ -n ${CPUTIME:-} ]]; then
			# shellcheck disable=SC2086
			"$out/cputime" "$out/overhead.all" ${cmds[$name]} "$out/cputime" "$out/overhead.cpu" "${work[@]}" >/dev/null 2>"$out/overhead.err" ||
				{ echo "round $((i + 1)), $name failed:" >&2; tail -5 "$out/overhead.err" >&2; exit 1; }
			times[$name]+="$(cat "$out/overhead.cpu") "
			own[$name]+="$(awk -v w="$(cat "$out/overhead.cpu")" '{ printf "%.6f", $1 - w }' "$out/overhead.all") "
			continue
		fi
		t0=$(date +%s.%N)
		${cmds[$name]} "${work[@]}" >/dev/null 2>&1
		t1=$(date +%s.%N)
		times[$name]+="$(echo "$t1 - $t0" | bc) "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The VM's speed drifts by a few percent over minutes; the ratio of each run
# to the bare run of the same round cancels most of that drift, so the median
# of those paired ratios is the steadier figure.
ratios() {
	paste -d' ' <(echo "${times[$1]}" | tr ' ' '\n' | grep -v '^$') <(echo "${times[bare]}" | tr ' ' '\n' | grep -v '^$') |
		awk '{print ($1 / $2 - 1) * 100}'
}
paired() { ratios "$1" | median; }
# A distribution-free 95% confidence interval of the paired median: the order
# statistics ⌈n/2 − 0.98·sqrt(n)⌉ and its mirror of the sorted ratios (the sign test's
# interval; with fewer than 6 runs it is the whole range).
pairedci() {
	ratios "$1" | sort -g | awk '{a[NR]=$1} END {
		lo = NR/2 - 0.98 * sqrt(NR); lo = (lo == int(lo)) ? lo : int(lo) + 1
		if (lo < 1) lo = 1; hi = NR + 1 - lo
		printf "%+.2f%%..%+.2f%%", a[lo], a[hi] }'
}
# The mean of the paired ratios (percent, one a line on stdin), a 95%
# percentile bootstrap interval of that mean (2000 resamples) and their
# standard deviation.
bootmean() {
	local x lo hi
	x=$(cat)
	read -r lo hi < <(echo "$x" | awk 'BEGIN { srand(1) } { a[NR] = $1 } END {
		for (b = 1; b <= 2000; b++) {
			t = 0
			for (k = 1; k <= NR; k++) t += a[int(rand() * NR) + 1]
			print t / NR
		}
	}' | sort -g | sed -n '50p;1951p' | paste -sd' ')
	echo "$x" | awk -v lo="$lo" -v hi="$hi" '{ s += $1; q += $1 * $1 } END {
		m = s / NR; sd = (NR > 1) ? sqrt((q - s * s / NR) / (NR - 1)) : 0
		printf "%+.2f%% %+.2f%%..%+.2f%% %.2f\n", m, lo, hi, sd }'
}
base=$(echo "${times[bare]}" | median)
printf "%-32s %10s %10s %12s  %-18s %10s  %-18s %6s %s\n" config "median s" "vs bare" "paired" "paired 95% CI" "mean" "mean 95% CI" "sd" "${CPUTIME:+recorder CPU s}"
for name in "${order[@]}"; do
	m=$(echo "${times[$name]}" | median)
	ci="" bm="" bci="" sd=""
	[[ $name == bare ]] || { ci=$(pairedci "$name"); read -r bm bci sd < <(ratios "$name" | bootmean); }
	rec=""
	[[ -z ${CPUTIME:-} ]] || rec=$(echo "${own[$name]}" | median)
	printf "%-32s %10.3f %+9.1f%% %+11.2f%%  %-18s %10s  %-18s %6s %s\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)" "$(paired "$name")" "$ci" "$bm" "$bci" "$sd" "$rec"
done
if [[ -n ${DIFF:-} ]]; then
	read -r da db <<<"$DIFF"
	[[ -n ${times[$da]+set} && -n ${times[$db]+set} ]] || { echo "DIFF names configurations not run: $DIFF" >&2; exit 2; }
	d=$(paste -d' ' <(ratios "$da") <(ratios "$db") | awk '{ print $1 - $2 }')
	read -r bm bci sd < <(echo "$d" | bootmean)
	printf "\n%s less %s, per round over its bare run: median %+.2f%%, mean %s (95%% CI %s, sd %s)\n" "$da" "$db" \
		"$(echo "$d" | median)" "$bm" "$bci" "$sd"
fi
echo "rounds: $runs, each in the opposite order of the one before"
printf "\nfiles of the last run (bytes, samples, bytes per sample):\n"
for f in culprit-fp.rec culprit-thread.rec culprit-values.rec culprit-dwarf.rec perf-fp.data perf-dwarf.data; do
	name=${f%.*}
	[[ " ${order[*]} " == *" $name "* ]] || continue
	if [[ $f == *.rec ]]; then
		n=$("$out/culprit" report --format json "$out/$f" 2>/dev/null | grep -m1 '"samples"' | tr -dc 0-9)
	else
		n=$(perf script -i "$out/$f" -F time 2>/dev/null | wc -l)
	fi
	printf "%-18s %10s %7s %8.1f\n" "$f" "$(stat -c %s "$out/$f")" "$n" "$(echo "$(stat -c %s "$out/$f") / $n" | bc -l)"
done
echo "load: $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
