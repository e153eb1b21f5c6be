#!/usr/bin/env bash
# The cost of culprit variance to a real server, measured side by side.
#
# On a machine shared with other work, a server's throughput moves by tens
# of percent between runs a minute apart (docs/performance.md), more than
# the effect to measure. Here two copies of the same memcached (the build
# of bench/variance.sh, -t 2) run at the same time, each driven over
# loopback by its own mcmix (-t 2, the same mix of value sizes): one
# alone, one under culprit variance with about 500 probed functions
# (every function of memcached uprobes take and as many of libevent's as
# make 500, --rounds 1, the default trap budget or the flags of -x). Both
# see the same load at every moment, so their ratio is paired in time. The
# profiled one's extra CPU time (traps) comes out of the same two CPUs:
# the ratio is that of the throughput the two servers get for the CPU the
# machine gives them. Each run swaps the two servers' ports and start
# order. The report is each run's ratio, its median, the servers' CPU time
# per get and the machine's load.
#
#   bench/variance-side.sh [-o OUT] [-r RUNS] [-d SECONDS] [-c CULPRIT] [-x 'FLAGS'] [-P] [-s]
#
# -o is bench/variance.sh's OUT, where it built memcached (default
# bench/out/variance).
#
# -s compares variance --sched with plain variance instead: the first
# server runs under culprit variance --start drive_machine --rounds 1
# --trap-budget 0 (every call of drive_machine traced; "alone" below), the
# second under the same with --sched (and -x's flags).
#
# -P pins: both servers' threads to CPU 0, the loads and culprit to CPU 1.
# Unpinned, where the scheduler places two servers and four clients on two
# CPUs decides much of each run's throughput (the control's ratios spread
# 0.57-1.59); pinned, the two servers share one CPU, which the scheduler
# divides evenly between their threads, and the ratio is that of the gets
# each serves for the same CPU time. culprit's own CPU is then not taken
# from the server: it is reported beside.
#
# -c runs another culprit binary (default: built from this tree); -c none
# runs the second server alone too, the control (its ratio is the
# method's own error).
# Needs root; run bench/variance.sh once first (it builds memcached).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/variance
runs=5
secs=20
culprit=
extra=()
control=
pin=
sched=
while getopts "o:r:d:c:x:Ps" opt; do
	case $opt in
	o) out=$OPTARG ;;
	r) runs=$OPTARG ;;
	d) secs=$OPTARG ;;
	c) culprit=$OPTARG ;;
	x) read -r -a extra <<<"$OPTARG" ;;
	P) pin=1 ;;
	s) sched=1 ;;
	*) echo "usage: bench/variance-side.sh [-o OUT] [-r RUNS] [-d SECONDS] [-c CULPRIT] [-x 'FLAGS'] [-P] [-s]" >&2; exit 2 ;;
	esac
done
mc=$out/memcached/memcached
[ -x "$mc" ] || { echo "no $mc: run bench/variance.sh first (it builds memcached)" >&2; exit 1; }
if [ "$culprit" = none ]; then
	culprit=
	control=1
elif [ -z "$culprit" ]; then
	culprit=$out/culprit-side
	CGO_ENABLED=0 go build -o "$culprit" "$root/cmd/culprit"
fi
cc -O2 -Wall -pthread -o "$out/mcmix" "$root/bench/variance/mcmix.c"

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# The same ~500 functions as bench/variance.sh's overhead part.
objdump -d --no-show-raw-insn "$mc" | awk '/^[0-9a-f]+ <.*>:$/ { name = substr($2, 2, length($2) - 3); getline; if ($2 == "lock") print name }' | sort -u >"$tmp/locked"
nm -S --defined-only "$mc" | awk 'NF == 4 && $3 ~ /^[tT]$/ && $4 !~ /\.cold/ && $4 != "_start" { print $4 }' | sort -u | comm -23 - "$tmp/locked" >"$tmp/own"
nmc=$(wc -l <"$tmp/own")
libevent=$(ldd "$mc" | awk '/libevent-/ { print $3 }')
libpats=()
while read -r f; do libpats+=(--lib "$libevent:$f"); done < <(nm -D --defined-only "$libevent" | awk '$2 == "T" { print $3 }' | sort -u | head -n $((500 - nmc)))

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# on1 runs culprit on CPU 1 with -P (the same process: $! is culprit's).
on1=()
[ -n "$pin" ] && on1=(taskset -c 1)
# on CPU CMD...: runs CMD on CPU with -P, else as it is.
on() {
	local c=$1
	shift
	if [ -n "$pin" ]; then taskset -c "$c" "$@"; else "$@"; fi
}
hz=$(getconf CLK_TCK)
# switches PID: the context switches of its threads so far.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }
# up PIDFILE PORT: waits until the server of PIDFILE listens on PORT.
up() {
	for _ in $(seq 1 600); do
		if [ -s "$1" ] && (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "memcached did not start listening on $2" >&2
	exit 1
}

[ -n "$sched" ] && echo "== side by side: memcached under culprit variance --start drive_machine --rounds 1 --trap-budget 0 (\"alone\") and the same with --sched ${extra[*]} (\"profiled\")"
echo "== side by side${pin:+, pinned (servers CPU 0, loads and culprit CPU 1)}: memcached alone and under culprit variance (${nmc} + $(( ${#libpats[@]} / 2 )) functions, --rounds 1 ${extra[*]}), mcmix -t 2 -d $secs each, $runs runs ($(date -u '+%Y-%m-%d %H:%M'))"
ratios=() cratios=()
for i in $(seq 1 "$runs"); do
	pa=$(( 20000 + RANDOM % 10000 )) pb=$(( 30000 + RANDOM % 10000 ))
	[ $((i % 2)) -eq 0 ] && { t=$pa; pa=$pb; pb=$t; }
	rm -f "$tmp/a.pid" "$tmp/b.pid"
	load0=$(cut -d' ' -f1 /proc/loadavg)
	apid=
	start_alone() {
		if [ -n "$sched" ]; then
			"${on1[@]}" "$culprit" variance --start drive_machine --rounds 1 --trap-budget 0 -o "$tmp/a.rec" -- \
				"$mc" -U 0 -p "$pa" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/a.pid" >"$tmp/a.log" 2>&1 &
			apid=$!
			pids+=("$apid")
			return
		fi
		"$mc" -U 0 -p "$pa" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/a.pid" >"$tmp/a.log" 2>&1 &
		pids+=($!)
	}
	start_prof() {
		if [ -n "$control" ]; then
			"$mc" -U 0 -p "$pb" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/b.pid" >"$tmp/b.log" 2>&1 &
			cpid=$!
			pids+=("$cpid")
			return
		fi
		if [ -n "$sched" ]; then
			"${on1[@]}" "$culprit" variance --sched --start drive_machine --rounds 1 --trap-budget 0 "${extra[@]}" -o "$tmp/b.rec" -- \
				"$mc" -U 0 -p "$pb" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/b.pid" >"$tmp/b.log" 2>&1 &
			cpid=$!
			pids+=("$cpid")
			return
		fi
		"${on1[@]}" "$culprit" variance --start drive_machine --functions "$(paste -sd, "$tmp/own")" "${libpats[@]}" --rounds 1 "${extra[@]}" -o "$tmp/b.rec" -- \
			"$mc" -U 0 -p "$pb" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/b.pid" >"$tmp/b.log" 2>&1 &
		cpid=$!
		pids+=("$cpid")
	}
	if [ $((i % 2)) -eq 1 ]; then start_alone; start_prof; else start_prof; start_alone; fi
	up "$tmp/a.pid" "$pa"
	up "$tmp/b.pid" "$pb"
	sa=$(cat "$tmp/a.pid") sb=$(cat "$tmp/b.pid")
	if [ -n "$pin" ]; then
		taskset -a -p -c 0 "$sa" >/dev/null
		taskset -a -p -c 0 "$sb" >/dev/null
	fi
	a0=$(cpu "$sa") b0=$(cpu "$sb") c0=$(cpu "$cpid")
	xa0=$(switches "$sa") xb0=$(switches "$sb")
	if [ $((i % 2)) -eq 1 ]; then
		on 1 "$out/mcmix" -p "$pa" -t 2 -d "$secs" >"$tmp/a.out" &
		ma=$!
		on 1 "$out/mcmix" -p "$pb" -t 2 -d "$secs" >"$tmp/b.out"
	else
		on 1 "$out/mcmix" -p "$pb" -t 2 -d "$secs" >"$tmp/b.out" &
		ma=$!
		on 1 "$out/mcmix" -p "$pa" -t 2 -d "$secs" >"$tmp/a.out"
	fi
	wait "$ma"
	a1=$(cpu "$sa") b1=$(cpu "$sb") c1=$(cpu "$cpid")
	xa1=$(switches "$sa") xb1=$(switches "$sb")
	kill -TERM "$sa" "$sb"
	wait "$cpid" || true
	[ -z "$apid" ] || wait "$apid" || true
	load1=$(cut -d' ' -f1 /proc/loadavg)
	oa=$(awk '{ print $6 }' "$tmp/a.out") ob=$(awk '{ print $6 }' "$tmp/b.out")
	na=$(awk '{ print $2 }' "$tmp/a.out") nb=$(awk '{ print $2 }' "$tmp/b.out")
	ga=$(awk -v a="$a0" -v b="$a1" -v n="$na" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
	gb=$(awk -v a="$b0" -v b="$b1" -v n="$nb" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
	cc=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.1f", (b - a) / hz / s * 100 }')
	off=$(grep -o 'off [0-9]* times, [0-9.]*[a-z]* in all.*included' "$tmp/b.log" | head -n 1 || true)
	xa=$(awk -v a="$xa0" -v b="$xa1" -v n="$na" 'BEGIN { printf "%.2f", (b - a) / n }')
	xb=$(awk -v a="$xb0" -v b="$xb1" -v n="$nb" 'BEGIN { printf "%.2f", (b - a) / n }')
	r=$(awk -v a="$oa" -v b="$ob" 'BEGIN { printf "%.3f", b / a }')
	cr=$(awk -v a="$ga" -v b="$gb" 'BEGIN { printf "%.3f", b / a }')
	echo "run $i (load $load0-$load1): alone $oa ops/s, $ga µs CPU/get, $xa switches/get; profiled $ob ops/s, $gb µs CPU/get, $xb switches/get, culprit ${cc}% of a CPU (probes $off); ratio $r, CPU/get ratio $cr"
	ratios+=("$r") cratios+=("$cr")
	pids=()
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# boot RATIO...: a 95% bootstrap interval of the median (2000 resamples).
boot() {
	printf '%s\n' "$@" | awk 'function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{ v[NR] = $1 } END { srand(1); for (b = 1; b <= 2000; b++) { for (i = 1; i <= NR; i++) s[i] = v[int(rand() * NR) + 1]; m[b] = med(s, NR) } med(m, 2000); printf "%.3f-%.3f", m[50], m[1950] }'
}
mr=$(median "${ratios[@]}") mc2=$(median "${cratios[@]}")
awk -v r="$mr" -v c="$mc2" -v all="${ratios[*]}" -v bi="$(boot "${ratios[@]}")" -v bc="$(boot "${cratios[@]}")" 'BEGIN { printf "median of %d runs: throughput loss %.1f%% (ratio %.3f, 95%% bootstrap interval %s; runs %s), server CPU per get %+.1f%% (ratio interval %s)\n", split(all, x, " "), 100 * (1 - r), r, bi, all, 100 * (c - 1), bc }'
