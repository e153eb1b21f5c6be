#!/usr/bin/env bash
# The recorder on a real server: Debian's redis (7.0.15-1~deb12u7, built from
# `apt-get source` once, -O2 -g as Debian builds it: frame pointers in redis,
# none in libc) under a loopback load, bare and under culprit record with
# each kind of collection, RUNS times interleaved.
#
# The load generator is redis-benchmark from the same build: CLIENTS
# connections sending REQUESTS requests of each of SET, GET, INCR, LPUSH,
# LPOP, SADD, HSET and MSET (its -t list), bounded: it stops by itself. The
# server runs on a random loopback port and is stopped with SIGTERM, which
# also ends the recording.
#
# SERVER=memcached runs Debian's memcached 1.6.18 instead (built from
# `apt-get source` by bench/bugs/memcached-auth-spin/build.sh, -O2 -g
# without frame pointers anywhere; its case's regression is in ASCII
# authentication, which this server runs without), 2 worker threads,
# driven by that case's mcload: CLIENTS threads, each one connection
# sending set/get pairs and awaiting each reply, 8 × REQUESTS requests in
# all as redis's load; the throughput is those requests over mcload's
# wall time.
#
# One row per configuration (medians over the runs; each run's figures are
# in OUTDIR/realserver.log):
#   throughput  requests per second of the whole load (redis-benchmark's
#               per-test rates weighted by their requests)
#   vs bare     throughput relative to the bare server's
#   samples     CPU samples recorded
#   lost        samples the kernel or culprit dropped
#   entry       share of CPU samples whose stack reaches its thread's entry
#               (main, or start_thread for the threads redis starts)
#
#   bench/realserver.sh [RUNS] [FREQ]
#
# CULPRIT names a culprit binary to use instead of this tree's build;
# REQUESTS (default 20000), CLIENTS (default 4), OUTDIR (default
# bench/out/realserver), CONFIGS (default "record values events"; bare
# always runs; events-perf is events through perf's tracepoint events
# (--perf-events); events-tick is events sampling CPU time at the
# scheduler's tick (-F tick); record-thread is record with --per-thread-clock (the
# threads' own cpu-clock events); perf is `perf record -F FREQ -g` and
# perf-dwarf `perf record -F FREQ --call-graph dwarf` (8 KiB copies), for comparison: their
# samples, lost samples (perf report --stats) and stacks reaching the
# entry (perf script)). Needs root, gcc, make, python3, dpkg-dev, perf and
# the Debian source mirror.
set -euo pipefail
kind=${SERVER:-redis}
case $kind in
redis | memcached) ;;
*)
	echo "realserver: SERVER must be redis or memcached" >&2
	exit 2
	;;
esac
runs=${1:-3}
freq=${2:-999}
root=$(cd "$(dirname "$0")/.." && pwd)
outdir=${OUTDIR:-$root/bench/out/realserver}
requests=${REQUESTS:-20000}
clients=${CLIENTS:-4}
mkdir -p "$outdir"
culprit=${CULPRIT:-}
if [ -z "$culprit" ]; then
	CGO_ENABLED=0 go build -o "$outdir/culprit" "$root/cmd/culprit"
	culprit=$outdir/culprit
fi

# Debian's redis without a patch: redis_build takes a case's patch and finds
# debsrc.sh beside the case's directory, so both are laid out in a scratch
# directory (an empty patch applies as is). It sets globals of its own (out,
# pkg, ...): this script's names differ.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/stock"
: >"$scratch/stock/none.patch"
ln -s "$root/bench/bugs/debsrc.sh" "$scratch/debsrc.sh"
# shellcheck source=bugs/redis.sh
. "$root/bench/bugs/redis.sh"
if [ "$kind" = redis ]; then
	redis_build "$outdir/redis" "$scratch/stock/none.patch"
	server=$outdir/redis/redis-server
	bench=$outdir/redis/redis-benchmark
else
	"$root/bench/bugs/memcached-auth-spin/build.sh" "$outdir/memcached"
	server=$outdir/memcached/memcached
	bench=$outdir/memcached/mcload
fi

declare -A prefix=(
	[bare]=""
	[record]="$culprit record -F $freq -o $outdir/record.rec --"
	[record-thread]="$culprit record -F $freq --per-thread-clock -o $outdir/record-thread.rec --"
	[values]="$culprit record -F $freq --values -o $outdir/values.rec --"
	[events]="$culprit record -F $freq --events cpu,syscalls,sched -o $outdir/events.rec --"
	[events-tick]="$culprit record -F tick --events cpu,syscalls,sched -o $outdir/events-tick.rec --"
	[events-perf]="$culprit record -F $freq --events cpu,syscalls,sched --perf-events -o $outdir/events-perf.rec --"
	[perf]="perf record -q -F $freq -g -o $outdir/perf.data --"
	[perf-dwarf]="perf record -q -F $freq --call-graph dwarf -o $outdir/perf.data --"
)
order=(bare ${CONFIGS:-record values events})

# one CONFIG: runs the server under the config's prefix and the load;
# prints "throughput samples lost entry".
one() {
	local cfg=$1 port pidfile log pid rps
	port=$((20000 + RANDOM % 20000))
	pidfile=$scratch/server.pid
	log=$scratch/bench.out
	rm -f "$pidfile"
	if [ "$kind" = redis ]; then
		# shellcheck disable=SC2086
		${prefix[$cfg]} "$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
			--pidfile "$pidfile" --dir "$scratch" --logfile "$scratch/server.log" 2>"$scratch/culprit.err" &
	else
		# shellcheck disable=SC2086
		${prefix[$cfg]} "$server" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -P "$pidfile" -u root \
			>"$scratch/server.log" 2>"$scratch/culprit.err" &
	fi
	pid=$!
	for _ in $(seq 1 300); do
		if [ -s "$pidfile" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
		kill -0 "$pid" 2>/dev/null || { echo "realserver: $kind exited early" >&2; cat "$scratch/server.log" "$scratch/culprit.err" >&2; exit 1; }
		sleep 0.1
	done
	local t0 t1 pairs=$((requests * 4 / clients))
	t0=$(date +%s%N)
	if [ "$kind" = redis ]; then
		"$bench" -p "$port" -c "$clients" -n "$requests" -t set,get,incr,lpush,lpop,sadd,hset,mset -q >"$log" 2>&1
	else
		"$bench" -p "$port" -u bench -k secret -t "$clients" -s 1 -n "$pairs" >"$log" 2>&1
	fi || {
		cat "$log" >&2
		kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
		wait "$pid" || true
		exit 1
	}
	t1=$(date +%s%N)
	kill -TERM "$(cat "$pidfile")"
	wait "$pid" || true
	if [ "$kind" = memcached ]; then
		rps=$(awk -v n="$((2 * pairs * clients))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }')
	else
		# Weighted by requests: the total requests over the total time.
		rps=$(tr '\r' '\n' <"$log" | python3 -c '
import re, sys
rates = [float(m.group(1)) for m in re.finditer(r":\s*([0-9.]+) requests per second", sys.stdin.read())]
print("%.0f" % (len(rates) / sum(1 / r for r in rates)) if rates else "nan")')
	fi
	if [ "$cfg" = bare ]; then
		echo "$rps - - -"
		return
	fi
	if [ "${cfg%-dwarf}" = perf ]; then
		local samples lost
		samples=$(perf report -i "$outdir/perf.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
		lost=$(perf report -D -i "$outdir/perf.data" 2>/dev/null | awk '/PERF_RECORD_LOST/ { n += $NF } END { print n + 0 }')
		perf script -i "$outdir/perf.data" -F ip,sym 2>/dev/null | python3 -c '
import sys
n = entry = 0
for block in sys.stdin.read().split("\n\n"):
    syms = block.split()
    if not syms:
        continue
    n += 1
    entry += "main" in syms or "start_thread" in syms
print(sys.argv[1], sys.argv[2], sys.argv[3], "%.1f%%" % (100 * entry / max(n, 1)))' "$rps" "${samples:-0}" "$lost"
		return
	fi
	"$culprit" report --format json "$outdir/$cfg.rec" | python3 -c '
import json, sys
d = json.load(sys.stdin)
entry = sum(e["total"] for e in d["entries"] if e["name"] in ("main", "start_thread"))
print(sys.argv[1], d["samples"], d["lost"], "%.1f%%" % (100 * entry))' "$rps"
}

: >"$outdir/realserver.log"
declare -A res
# Each round runs every configuration in an order rotated from round to
# round, bare included: a run's place in a round weighs on it (bench/
# eventcost.sh's bare-again), and a fixed place favours one.
for r in $(seq 1 "$runs"); do
	for ((i = 0; i < ${#order[@]}; i++)); do
		c=${order[(i + r) % ${#order[@]}]}
		line=$(one "$c")
		echo "run $r $c $line" >>"$outdir/realserver.log"
		res[$c]+="$line"$'\n'
	done
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) {print "-"} else if (NR % 2) {print a[(NR+1)/2]} else {print (a[NR/2]+a[NR/2+1])/2}}'; }
bare=$(printf '%s' "${res[bare]}" | awk '{print $1}' | median)
printf '%-12s %12s %8s %8s %8s %8s\n' config throughput "vs bare" samples lost entry
for c in "${order[@]}"; do
	col() { printf '%s' "${res[$c]}" | awk -v k="$1" '$k != "-" {sub(/%$/, "", $k); print $k}' | median; }
	t=$(col 1)
	rel=$(awk -v t="$t" -v b="$bare" 'BEGIN {printf "%+.1f%%", 100 * (t / b - 1)}')
	if [ "$c" = bare ]; then
		printf '%-12s %12s %8s %8s %8s %8s\n' "$c" "$t" - - - -
	else
		printf '%-12s %12s %8s %8s %8s %7s%%\n' "$c" "$t" "$rel" "$(col 2)" "$(col 3)" "$(col 4)"
	fi
done
echo "$kind: runs $runs, $freq Hz, $requests requests x 8 commands, $clients clients; load: $(cut -d' ' -f1-3 /proc/loadavg)"
