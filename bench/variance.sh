#!/usr/bin/env bash
# culprit variance on a real server, and what it costs.
#
# memcached 1.6.18 from Debian's source package (memcached=1.6.18-1+deb12u1, or 1.6.18-1 where the mirror lists only that,
# Debian's patches only, -g -O2), 2 worker threads, serves mcmix over
# loopback: 2 clients, each on its own connection, sending gets one after
# another, one in ten for a 512 KiB value and the others for a 100-byte one.
# The variance source is injected by the workload: the size of the value a
# get returns.
#
#   1. evidence: RUNS runs of culprit variance with requests as intervals
#      (process_command_ascii's entry to conn_release_items' return, paired
#      by the connection's socket read through the conn pointer, c->sfd;
#      drive_machine attached), a trap budget of 50,000, while mcmix runs
#      for SECONDS (with -n OPS: OPS gets per client); prints a row of
#      VProfiler's Table 3 statistics per run and the last run's report.
#   2. overhead: mcmix's throughput over SECONDS with the server alone and
#      under culprit variance with about 500 probed functions (every function
#      of memcached and as many of libevent's as make 500, one round) and the
#      default trap budget (probes set in windows, paused between them), or
#      the flags given with -x; RUNS pairs, alone and profiled one after the
#      other, the order alternating. The server's speed on this machine
#      moves with its load from run to run, so each pair gives a ratio and
#      the report is the median of the ratios, with the server's own CPU
#      time per get (which the load moves less) and culprit's CPU.
#
#   bench/variance.sh [-o OUTDIR] [-n OPS] [-r RUNS] [-d SECONDS] [-O] [-E] [-x 'FLAGS']
#
# -O runs the overhead part only; -E also runs every call traced
# (--trap-budget 0) in each pair; -x gives culprit variance more flags for
# the profiled runs (e.g. -x '--trap-budget 5000').
#
# Needs root, gcc, python3, dpkg-dev and the Debian mirror (apt-get source).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/variance
ops=
runs=3
secs=30
only=
every_too=
extra=()
while getopts "o:n:r:d:OEx:" opt; do
	case $opt in
	o) out=$OPTARG ;;
	n) ops=$OPTARG ;;
	r) runs=$OPTARG ;;
	d) secs=$OPTARG ;;
	O) only=overhead ;;
	E) every_too=1 ;;
	x) read -r -a extra <<<"$OPTARG" ;;
	*) echo "usage: bench/variance.sh [-o OUTDIR] [-n OPS] [-r RUNS] [-d SECONDS] [-O] [-E] [-x 'FLAGS']" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
culprit=$out/culprit
CGO_ENABLED=0 go build -o "$culprit.new" "$root/cmd/culprit" && mv "$culprit.new" "$culprit"

# Build memcached (once) and the load generator.
mc=$out/memcached
if [ ! -x "$mc/memcached" ]; then
	. "$root/bench/bugs/debsrc.sh"
	dpkg -s libevent-dev >/dev/null 2>&1 || apt-get install -y -qq libevent-dev >/dev/null
	mkdir -p "$mc"
	debsrc_fetch memcached "1.6.18-1+deb12u1|1.6.18-1" "$mc" /dev/null
	(cd "$mc/src" && ./configure --disable-sasl --disable-extstore --disable-coverage && make -j"$(nproc)" memcached) >"$mc/build.log" 2>&1 || {
		tail -n 30 "$mc/build.log" >&2
		exit 1
	}
	cp "$mc/src/memcached" "$mc/memcached"
fi
cc -O2 -Wall -pthread -o "$out/mcmix" "$root/bench/variance/mcmix.c"

tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill -KILL "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# serve LOG PREFIX...: memcached under PREFIX (nothing, or culprit ... --),
# its output and PREFIX's in LOG, listening on $port once this returns.
serve() {
	log=$1
	shift
	port=$(( 20000 + RANDOM % 20000 ))
	rm -f "$tmp/mc.pid"
	"$@" "$mc/memcached" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/mc.pid" >"$log" 2>&1 &
	prefix_pid=$!
	for _ in $(seq 1 600); do
		if [ -s "$tmp/mc.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			server=$(cat "$tmp/mc.pid")
			return 0
		fi
		kill -0 "$prefix_pid" 2>/dev/null || { echo "memcached exited early" >&2; exit 1; }
		sleep 0.1
	done
	echo "memcached did not start listening" >&2
	exit 1
}

# stop: SIGTERM to the server, then wait for its prefix (culprit reports).
stop() {
	kill -TERM "$server"
	wait "$prefix_pid" || true
	server=
}

if [ -z "$only" ]; then
	load=(-d "$secs")
	[ -n "$ops" ] && load=(-n "$ops")
	echo "== evidence: requests as intervals, mcmix -t 2 ${load[*]}, $runs runs ($(date -u '+%Y-%m-%d %H:%M'))"
	echo "run | rounds | functions | intervals | mean µs | p99 µs | height | breadth | top 3 factors"
	for i in $(seq 1 "$runs"); do
		serve "$out/evidence.txt" "$culprit" variance --start process_command_ascii --end conn_release_items --key 'c->sfd' \
			--attach drive_machine --round-intervals 2000 --trap-budget 50000 -o "$out/evidence.rec" --
		"$out/mcmix" -p "$port" -t 2 "${load[@]}" >/dev/null
		stop
		if ! "$culprit" variance -i "$out/evidence.rec" --format json >"$out/evidence.json"; then
			echo "$(date -u +%H:%M) | no report: the last round has no intervals (give -d more seconds)"
			continue
		fi
		python3 - "$out/evidence.json" "$(date -u +%H:%M)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
top = ", ".join("%s %.1f%%" % (" & ".join(f["names"]), 100 * f["contribution"]) for f in d["factors"][:3])
print("%s | %d | %d | %d | %.0f | %.0f | %d | %d | %s" % (sys.argv[2], d["rounds"], d["probes"], d["intervals"],
      d["mean_ns"] / 1e3, d["p99_ns"] / 1e3, d["tree_height"], d["tree_breadth"], top))
PY
	done
	cat "$out/evidence.txt"
fi

# About 500 functions: memcached's own (those with a size, less the cold
# parts, the entry point and the few whose first instruction has a lock
# prefix, which the kernel's uprobes refuse), then libevent's in name
# order up to 500.
objdump -d --no-show-raw-insn "$mc/memcached" | awk '/^[0-9a-f]+ <.*>:$/ { name = substr($2, 2, length($2) - 3); getline; if ($2 == "lock") print name }' | sort -u >"$tmp/locked"
nm -S --defined-only "$mc/memcached" | awk 'NF == 4 && $3 ~ /^[tT]$/ && $4 !~ /\.cold/ && $4 != "_start" { print $4 }' | sort -u | comm -23 - "$tmp/locked" >"$tmp/own"
own=$(paste -sd, "$tmp/own")
nmc=$(wc -l <"$tmp/own")
libevent=$(ldd "$mc/memcached" | awk '/libevent-/ { print $3 }')
want=$(( 500 - nmc ))
libpats=()
if [ "$want" -gt 0 ]; then
	while read -r f; do libpats+=(--lib "$libevent:$f"); done < <(nm -D --defined-only "$libevent" | awk '$2 == "T" { print $3 }' | sort -u | head -n "$want")
fi

# cpu PID: the user+system CPU time of a process so far, in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

# measure NAME LOG PREFIX...: one run of mcmix against memcached under
# PREFIX; sets ops (ops/s), scpu (the server's CPU, µs per get) and ccpu
# (culprit's CPU, % of one CPU over the run).
measure() {
	local name=$1 log=$2
	shift 2
	serve "$log" "$@"
	local s0 c0 n
	s0=$(cpu "$server") c0=$(cpu "$prefix_pid")
	n=$("$out/mcmix" -p "$port" -t 2 -d "$secs")
	ops=$(awk '{ print $6 }' <<<"$n")
	local total
	total=$(awk '{ print $2 }' <<<"$n")
	scpu=$(awk -v a="$s0" -v b="$(cpu "$server")" -v n="$total" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
	ccpu=0
	if [ "$prefix_pid" != "$server" ] && [ $# -gt 0 ]; then
		ccpu=$(awk -v a="$c0" -v b="$(cpu "$prefix_pid")" -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.1f", (b - a) / hz / s * 100 }')
	fi
	stop
}

echo "== overhead: mcmix -t 2 -d $secs, $runs pairs alone/profiled, order alternating ($(date -u '+%Y-%m-%d %H:%M'))"
echo "   profiled: culprit variance --start drive_machine, $(( nmc + ${#libpats[@]} / 2 )) functions, --rounds 1 ${extra[*]}"
ratios=() cratios=() base=() prof=() every=()
for i in $(seq 1 "$runs"); do
	order=(alone prof)
	[ $((i % 2)) -eq 0 ] && order=(prof alone)
	for c in "${order[@]}"; do
		if [ "$c" = alone ]; then
			measure alone "$tmp/alone.txt"
			b=$ops bs=$scpu
		else
			measure prof "$out/overhead.txt" "$culprit" variance --start drive_machine --functions "$own" "${libpats[@]}" --rounds 1 "${extra[@]}" -o "$out/overhead.rec" --
			p=$ops ps=$scpu pc=$ccpu
		fi
	done
	e=
	if [ -n "$every_too" ]; then
		measure every "$out/every.txt" "$culprit" variance --start drive_machine --functions "$own" "${libpats[@]}" --rounds 1 --trap-budget 0 -o "$out/every.rec" --
		e="; every call traced $ops ops/s"
		every+=("$ops")
	fi
	probes=$(grep -o 'of [0-9]* functions' "$out/overhead.txt" | head -n 1 || true)
	off=$(grep -o 'off [0-9]* times, [0-9.]*[a-z]* in all' "$out/overhead.txt" | head -n 1 || true)
	ivs=$("$culprit" variance -i "$out/overhead.rec" --format json | awk -F'[:,]' '/"intervals"/ && !n++ { print $2 }')
	r=$(awk -v b="$b" -v p="$p" 'BEGIN { printf "%.3f", p / b }')
	cr=$(awk -v b="$bs" -v p="$ps" 'BEGIN { printf "%.3f", p / b }')
	echo "pair $i (${order[*]}): alone $b ops/s, server ${bs} µs CPU/get; profiled $p ops/s, server ${ps} µs CPU/get, culprit ${pc}% of a CPU ($probes, probes $off, $ivs intervals)$e; throughput ratio $r, server CPU/get ratio $cr"
	ratios+=("$r") cratios+=("$cr") base+=("$b") prof+=("$p")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mr=$(median "${ratios[@]}") mc=$(median "${cratios[@]}")
awk -v r="$mr" -v c="$mc" -v b="$(median "${base[@]}")" -v p="$(median "${prof[@]}")" 'BEGIN { printf "median of the pairs: throughput loss %.1f%% (ratio %.3f), server CPU per get %+.1f%%; medians alone %d ops/s, profiled %d ops/s\n", 100 * (1 - r), r, 100 * (c - 1), b, p }'
if [ -n "$every_too" ]; then
	echo "every call traced: median $(median "${every[@]}") ops/s"
fi
