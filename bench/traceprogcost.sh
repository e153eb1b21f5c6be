#!/usr/bin/env bash
# What culprit trace's BPF programs cost a call, as the kernel measures
# them (kernel.bpf_stats_enabled, set for the run and put back after): for
# each build of culprit given, in turn, REPS rounds, a run of
# `culprit trace --cpu-sample 0 -f f_FIRST -- probecalls FIRST N` (the
# program of bench/probecost.sh) with and without --no-cpu-time, and each
# program's mean run time (entry and return, or the uprobe session program
# that is both, run twice a call; the one on sched_switch) as
# bench/bpfstats reads it at the last moment the run's programs are
# loaded. The counting itself adds about 45 ns to each run (two clock
# reads; an empty program reads so). With BPFTRACE=1, each round also
# runs bpftrace's histogram script of bench/probecost.sh on the same
# program and reads its two programs (told apart by bpftool perf) the
# same way. Needs root, gcc, go (and bpftool, bpftrace for BPFTRACE).
#
#   [BPFTRACE=1] bench/traceprogcost.sh [N] [REPS] [FIRST] [CULPRIT...]   (default: this tree's build)
set -euo pipefail
n=${1:-1500000}
reps=${2:-2}
first=${3:-push}
shift 3 || true
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/traceprogcost
mkdir -p "$out"
gcc -O2 -o "$out/probecalls" "$root/bench/probecost/probecalls.c" "$root/bench/probecost/first.S"
(cd "$root" && go build -o "$out/bpfstats" ./bench/bpfstats)
builds=("$@")
if [ ${#builds[@]} -eq 0 ]; then
	(cd "$root" && go build -o "$out/culprit" ./cmd/culprit)
	builds=("$out/culprit")
fi
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
for _ in $(seq "$reps"); do
	for b in "${builds[@]}"; do
		for flag in "" --no-cpu-time; do
			# shellcheck disable=SC2086
			"$b" trace --cpu-sample 0 $flag -f "f_$first" -o "$out/t.rec" -- "$out/probecalls" "$first" "$n" >"$out/prog" 2>"$out/err" &
			pid=$!
			: >"$out/last"
			while kill -0 "$pid" 2>/dev/null; do
				"$out/bpfstats" -n "$pid" >"$out/now" 2>/dev/null || true
				# A reading taken while the programs are being
				# removed lists fewer: the last full one is kept.
				[ "$(wc -l <"$out/now")" -ge "$(wc -l <"$out/last")" ] && [ -s "$out/now" ] && cp "$out/now" "$out/last"
				sleep 0.3
			done
			wait "$pid" || { cat "$out/err" >&2; exit 1; }
			# Each program that ran, in the order loaded (entry, return
			# or, where the kernel has uprobe sessions, one program for
			# both, run twice a call; then the switch program): ns a run
			# and its runs. A program loaded but not attached (the
			# entry, beside a session program) ran 0 times: left out.
			echo "$b ${flag:-(on-CPU time)} $(awk '/^cpu_us/ {printf "program %.2f µs/call", $2 / '"$n"'}' "$out/prog"): $(awk '$4 > 0 {printf "%s%s %.0f ns a run (%d runs by the last reading)", sep, $3, $5 / $4, $4; sep=" / "}' "$out/last")"
		done
	done
	if [ -n "${BPFTRACE:-}" ]; then
		bpftrace -e "uprobe:$out/probecalls:f_$first { @s[tid] = nsecs; } uretprobe:$out/probecalls:f_$first /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }" -c "$out/probecalls $first $n" >"$out/prog" 2>"$out/err" &
		pid=$!
		: >"$out/last"
		while kill -0 "$pid" 2>/dev/null; do
			# Its programs by what they are attached as, each's mean run
			# time now.
			bpftool perf 2>/dev/null | awk -v f="$out/probecalls" '$0 ~ f { for (i = 1; i < NF; i++) if ($i == "prog_id") print $(i+2), $(i+1) }' | while read -r kind id; do
				bpftool prog show id "$id" 2>/dev/null | awk -v k="$kind" '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) } } END { if (c > 0) printf "%s %.0f ns\n", k, t / c }'
			done >"$out/now"
			[ "$(wc -l <"$out/now")" -ge "$(wc -l <"$out/last")" ] && [ -s "$out/now" ] && cp "$out/now" "$out/last"
			sleep 0.3
		done
		wait "$pid" || true
		echo "bpftrace (histogram) $(awk '/^cpu_us/ {printf "program %.2f µs/call", $2 / '"$n"'}' "$out/prog"): $(awk '$1 == "uprobe" { e = $2 " " $3 } $1 == "uretprobe" { r = $2 " " $3 } END { print e " / " r }' "$out/last") per run (entry / return)"
	fi
done
echo "N=$n calls of f_$first; $(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
