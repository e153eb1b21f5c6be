#!/usr/bin/env bash
# IntroPerf costs.
#
# 1. Recording overhead (wall time) of culprit record --events cpu,syscalls,sched
#    on syscall-heavy workloads, against the bare run, a CPU-only recording and
#    event sampling (--event-period 10): RUNS runs of each, interleaved, medians.
#      - syscalls: testdata/targets/syscalls.c, 64-byte writes to /dev/null and
#        nothing else (every instruction is a system call's);
#      - jobs: testdata/targets/introperf_cov.c built without instrumentation:
#        4000 jobs of read(2), parsing, compression, write(2), nanosleep.
# 2. Analysis time on 1M events: a real recording of introperf_caller (all
#    events) repeated with bench/replicate to N events, then culprit latency
#    and culprit contexts on it (wall seconds and peak RSS, three times each).
#
#   bench/introperf.sh [RUNS] [N]
#
# Needs root, gcc and GNU time.
set -euo pipefail
runs=${1:-7}
n=${2:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
cflags=(-O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls)
gcc "${cflags[@]}" -o "$out/syscalls" "$root/testdata/targets/syscalls.c"
gcc "${cflags[@]}" -o "$out/jobs" "$root/testdata/targets/introperf_cov.c" -ldl
gcc "${cflags[@]}" -o "$out/caller" "$root/testdata/targets/introperf_caller.c"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

c="$out/culprit record -o $out/ip.rec"
declare -A cmds=(
	[bare]=""
	[cpu]="$c --"
	[events]="$c --events cpu,syscalls,sched --"
	[events-p10]="$c --events cpu,syscalls,sched --event-period 10 --"
)
order=(bare cpu events events-p10)
for w in syscalls jobs; do
	case $w in
	syscalls) work=("$out/syscalls" 200000) ;;
	jobs) work=("$out/jobs" 4000) ;;
	esac
	declare -A times=()
	declare -A lost=()
	for ((i = 0; i < runs; i++)); do
		for name in "${order[@]}"; do
			t0=$(date +%s.%N)
			${cmds[$name]} "${work[@]}" >/dev/null 2>"$out/err.txt"
			t1=$(date +%s.%N)
			times[$name]+="$(echo "$t1 - $t0" | bc) "
			lost[$name]=$(grep -o '[0-9]* lost' "$out/err.txt" | head -1 || true)
		done
	done
	base=$(echo "${times[bare]}" | median)
	printf "\nworkload %s (%s)\n%-12s %10s %10s  %s\n" "$w" "${work[*]##*/}" config "median s" "vs bare" "lost (last run)"
	for name in "${order[@]}"; do
		m=$(echo "${times[$name]}" | median)
		printf "%-12s %10.3f %+9.1f%%  %s\n" "$name" "$m" "$(echo "($m / $base - 1) * 100" | bc -l)" "${lost[$name]:-}"
	done
done

# Analysis time on N events.
"$out/culprit" record --events cpu,syscalls,sched -o "$out/seed.rec" -- "$out/caller" 1000 >/dev/null 2>&1
"$out/culprit" record --events cpu,syscalls,sched -o "$out/seed-base.rec" -- "$out/caller" 256 >/dev/null 2>&1
go run "$root/bench/replicate" -n "$n" "$out/seed.rec" "$out/big.rec"
printf "\nrecording: %s events, %s bytes\n" "$n" "$(stat -c %s "$out/big.rec")"
for args in "report $out/big.rec" \
	"latency $out/big.rec" \
	"latency --format json -o $out/big.json $out/big.rec" \
	"latency --format chrome -o $out/big.trace.json $out/big.rec" \
	"contexts --base $out/seed-base.rec --buggy $out/big.rec" \
	"contexts --base $out/big.rec --buggy $out/big.rec --format html -o $out/big.html"; do
	for i in 1 2 3; do
		/usr/bin/time -f "%e s %M KiB" "$out/culprit" $args >/dev/null 2>"$out/time.txt" || true
		echo "culprit ${args//$out\//}: $(tail -1 "$out/time.txt")"
	done
done
