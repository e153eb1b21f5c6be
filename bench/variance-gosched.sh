#!/usr/bin/env bash
# The cost of culprit variance --sched's probes on the Go scheduler, paired.
#
# testdata/targets/gohandoff (a net/http server on loopback whose handler
# hands each request to a worker goroutine; its own client sends N
# requests one after another) runs in three ways, in turn within each run
# and in a rotated order from run to run: alone ("none"), under culprit
# variance timing main.handle, main.await and main.work without --sched
# ("probes"), and the same with --sched ("sched": also the kernel's
# scheduler events and the probes on the Go runtime: gopark, ready,
# send, recv, readyWithTime, closechan, the timers' and the network
# poller's; refinement's probes on the channel and mutex functions the
# program calls are not set with --rounds 1). All with --rounds 1 --trap-budget 0, so
# every call is traced. The figures are the program's own: requests a
# second (over the span of the requests' starts, on CLOCK_MONOTONIC), the
# mean of handle's latency, and its CPU time per request (user + system,
# getrusage at its end: the probes' traps are its system time). Each run's
# ratios sched/probes (what the scheduler probes add) and probes/none are
# paired in time; the report is each run's, their medians, the calls
# culprit recorded per request and the machine's load average at each
# run's start. On a shared machine the throughput moves with the load far
# more than the CPU per request does.
#
#   bench/variance-gosched.sh [-r RUNS] [-n REQUESTS] [-m chan|close|mutex]
#
# Needs root and Go.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=5
n=2000
mode=chan
while getopts "r:n:m:" opt; do
	case $opt in
	r) runs=$OPTARG ;;
	n) n=$OPTARG ;;
	m) mode=$OPTARG ;;
	*) echo "usage: bench/variance-gosched.sh [-r RUNS] [-n REQUESTS] [-m chan|close|mutex]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d /tmp/culprit-gosched-XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$work/culprit" ./cmd/culprit && CGO_ENABLED=0 go build -o "$work/gohandoff" ./testdata/targets/gohandoff)
start=main.handle
funcs=main.await,main.work
if [ "$mode" = mutex ]; then
	start=main.handleMutex
	funcs=main.lockedUpdate,main.holdBig
fi

# one CONFIG: runs gohandoff so and prints "rps mean_ns calls cpu_ns".
one() {
	local cfg=$1 calls=0
	case $cfg in
	none) "$work/gohandoff" "$n" "$mode" >"$work/out" ;;
	probes | sched)
		local flags=(--start "$start" --functions "$funcs" --rounds 1 --trap-budget 0 -o "$work/v.rec")
		[ "$cfg" = sched ] && flags=(--sched "${flags[@]}")
		"$work/culprit" variance "${flags[@]}" -- "$work/gohandoff" "$n" "$mode" >"$work/out" 2>"$work/err"
		calls=$(sed -n 's/^culprit: \([0-9]*\) calls of .*/\1/p' "$work/err" | tail -1)
		;;
	esac
	awk -v calls="${calls:-0}" -v n="$n" '$1 == "req" {
		s = $5 + 0; h += $3; k++
		if (lo == "" || s < lo) lo = s
		if (s > hi) hi = s
	}
	$1 == "cpu" { cpu = $2 + $3 }
	END { printf "%.1f %.0f %.1f %.0f\n", (k - 1) / ((hi - lo) / 1e9), h / k, calls / n, cpu / k }' "$work/out"
}

cfgs=(none probes sched)
echo "gohandoff $n $mode; $runs runs; $(nproc) CPUs; $(date -u +%FT%TZ)"
printf "%-4s %-6s %10s %10s %9s %10s  %s\n" run config req/s mean_ns calls/req cpu_ns/req load
rs=() ls=() cs=() ds=()
for ((r = 1; r <= runs; r++)); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	declare -A rps=() cpu=()
	for ((i = 0; i < 3; i++)); do
		c=${cfgs[$(((i + r) % 3))]}
		read -r q m k u < <(one "$c")
		rps[$c]=$q
		cpu[$c]=$u
		printf "%-4s %-6s %10s %10s %9s %10s  %s\n" "$r" "$c" "$q" "$m" "$k" "$u" "$load"
	done
	rs+=("$(awk -v a="${rps[sched]}" -v b="${rps[probes]}" 'BEGIN { printf "%.3f", a / b }')")
	ls+=("$(awk -v a="${rps[probes]}" -v b="${rps[none]}" 'BEGIN { printf "%.3f", a / b }')")
	cs+=("$(awk -v a="${cpu[sched]}" -v b="${cpu[probes]}" 'BEGIN { printf "%.3f", a / b }')")
	ds+=("$(awk -v a="${cpu[probes]}" -v b="${cpu[none]}" 'BEGIN { printf "%.3f", a / b }')")
	echo "run $r: throughput sched/probes ${rs[-1]}, probes/none ${ls[-1]}; CPU per request sched/probes ${cs[-1]}, probes/none ${ds[-1]} (load $load at its start, $(cut -d' ' -f1 /proc/loadavg) at its end)"
	unset rps cpu
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "median throughput ratio sched/probes $(med "${rs[@]}") (runs: ${rs[*]})"
echo "median throughput ratio probes/none $(med "${ls[@]}") (runs: ${ls[*]})"
echo "median CPU per request ratio sched/probes $(med "${cs[@]}") (runs: ${cs[*]})"
echo "median CPU per request ratio probes/none $(med "${ds[@]}") (runs: ${ds[*]})"
