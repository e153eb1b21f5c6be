#!/bin/bash
# eventprogs.sh [RUNS] [REQUESTS]: what each BPF program of `culprit record
# --events cpu,syscalls,sched` takes of a server's CPU a request, from
# the kernel's own count (kernel.bpf_stats_enabled, set for the run and
# put back after, also when the script fails). The server ($SERVER) and
# the load are bench/eventcost.sh's: Debian's redis in $REDIS_DIR,
# redis-benchmark SET and GET over loopback, REQUESTS each, 8 clients (the
# default), or memcached in $MEMCACHED_DIR driven by mcload, REQUESTS
# set/get pairs from 8 client threads. Each run is a bare
# server, then one recorded with $EVENTS (default cpu,syscalls,sched) and
# $FLAGS; bench/bpfstats reads the recorder's programs just before and
# just after the benchmark, and the table gives, per program (medians of
# RUNS), its runs a request, its mean run time, its time a request, and
# that time as a share of the bare server's CPU a request (in the load,
# from the threads' schedstat). The programs run for every thread of the
# machine (the benchmark's too), so the share is an upper bound of what
# they take of the server; the server's own thread switches a request
# are given beside sched_switch's runs. The counting itself adds about
# 45 ns to each run (two clock reads). With BESIDE=1 the recorder records
# a `sleep` instead while the server runs bare beside it: every run of the
# programs is then one for a thread they turn away, and "ns a run" what
# such a thread pays at each event. $CULPRIT names a culprit binary
# (default: this tree's build). Needs root.
set -euo pipefail
runs=${1:-3}
requests=${2:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/bench/out/eventprogs}
mkdir -p "$out"
server=${SERVER:-redis}
case $server in
redis)
	redis=${REDIS_DIR:-$root/bench/out/eventcost/redis}
	[ -x "$redis/redis-server" ] || "$root/bench/bugs/redis-keys-glob/build.sh" "$redis"
	;;
memcached)
	mc=${MEMCACHED_DIR:-$root/bench/out/eventcost/memcached}
	[ -x "$mc/memcached" ] && [ -x "$mc/mcload" ] || "$root/bench/bugs/memcached-auth-spin/build.sh" "$mc"
	;;
*)
	echo "eventprogs: SERVER must be redis or memcached" >&2
	exit 2
	;;
esac
culprit=${CULPRIT:-}
if [ -z "$culprit" ]; then
	culprit=$out/culprit
	(cd "$root" && CGO_ENABLED=0 go build -o "$culprit" ./cmd/culprit)
fi
(cd "$root" && go build -o "$out/bpfstats" ./bench/bpfstats)
events=${EVENTS:-cpu,syscalls,sched}
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

cpuns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{ n += $1 } END { printf "%.0f", n }'; }
switches() { { cat /proc/"$1"/task/*/status 2>/dev/null || true; } | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }

# one RECORDED: a run of the server (under the recorder when RECORDED is
# 1); prints "cpu-ns-a-request switches-a-request" and, recorded, leaves
# the programs' counts over the benchmark in $out/progs ("where runs ns").
one() {
	local tmp port spid wrapper
	tmp=$(mktemp -d)
	port=$((20000 + RANDOM % 10000))
	local pre=()
	# shellcheck disable=SC2206
	[ "$1" = 1 ] && pre=("$culprit" record -o "$out/run.rec" --events "$events" ${FLAGS:-} --)
	local beside=
	if [ "$1" = 1 ] && [ "${BESIDE:-0}" = 1 ]; then
		# shellcheck disable=SC2068
		${pre[@]} sleep 600 2>"$tmp/beside.err" &
		beside=$!
		pre=()
		sleep 1 # the recorder's programs attached
	fi
	if [ "$server" = redis ]; then
		"${pre[@]}" "$redis/redis-server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
			--pidfile "$tmp/pid" --dir "$tmp" --logfile "$tmp/log" 2>"$tmp/culprit.err" &
	else
		"${pre[@]}" "$mc/memcached" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -P "$tmp/pid" -u root \
			>"$tmp/log" 2>"$tmp/culprit.err" &
	fi
	wrapper=$!
	local rec=$wrapper
	[ -n "$beside" ] && rec=$beside
	for _ in $(seq 1 2400); do
		[ -s "$tmp/pid" ] && kill -0 "$(cat "$tmp/pid")" 2>/dev/null &&
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		kill -0 "$wrapper" 2>/dev/null || { cat "$tmp/culprit.err" >&2; echo "eventprogs: the server did not start" >&2; exit 1; }
		sleep 0.05
	done
	spid=$(cat "$tmp/pid")
	[ "$1" = 1 ] && "$out/bpfstats" -n "$rec" >"$tmp/b0"
	local s0 w0 s1 w1
	s0=$(cpuns "$spid")
	w0=$(switches "$spid")
	if [ "$server" = redis ]; then
		timeout 300 "$redis/redis-benchmark" -h 127.0.0.1 -p "$port" -t set,get -n "$requests" -c 8 -r 100000 -q >/dev/null 2>&1
	else
		timeout 300 "$mc/mcload" -p "$port" -u bench -k secret -t 8 -s 1 -n $((requests / 8))
	fi
	s1=$(cpuns "$spid")
	w1=$(switches "$spid")
	[ "$1" = 1 ] && "$out/bpfstats" -n "$rec" >"$tmp/b1"
	kill -TERM "$spid"
	wait "$wrapper" || true
	if [ -n "$beside" ]; then
		kill -TERM "$beside"
		wait "$beside" || true
		cp "$tmp/beside.err" "$tmp/culprit.err"
	fi
	if [ "$1" = 1 ]; then
		# Programs by id; a detached one (the system call programs
		# between windows) named by its place: sys_enter, then sys_exit.
		awk 'NR == FNR { r[$1] = $4; n[$1] = $5; next }
			{ w = $3; if (w == "detached" || w == "RawTracepoint") { w = (d++ == 0) ? "sys_enter" : "sys_exit" }
			  print w, $4 - r[$1], $5 - n[$1] }' "$tmp/b0" "$tmp/b1" |
			awk '{ w[$1] = $1; r[$1] += $2; n[$1] += $3 } END { for (k in w) print k, r[k], n[k] }' >"$out/progs"
	fi
	awk -v a="$s0" -v b="$s1" -v c="$w0" -v d="$w1" -v n="$requests" 'BEGIN { printf "%.1f %.3f\n", (b - a) / (2 * n), (d - c) / (2 * n) }'
	[ "$1" = 1 ] && cp "$tmp/culprit.err" "$out/culprit.err"
	rm -rf "$tmp"
}

: >"$out/all"
start="$(date -u '+%F %H:%M'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < runs; r++)); do
	read -r bare _ < <(one 0)
	read -r cpu sw < <(one 1)
	awk -v b="$bare" -v c="$cpu" -v s="$sw" '{ print $0, b, c, s }' "$out/progs" >>"$out/all"
done
echo "$server SET+GET, $requests requests each, 8 clients, $runs runs, \`--events $events ${FLAGS:-}\`$([ "${BESIDE:-0}" = 1 ] && echo ", recording a sleep beside the server")"
echo "from $start to $(date -u +%H:%M), load average $(cut -d' ' -f1-3 /proc/loadavg)"
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
bare=$(awk '{ print $4 }' "$out/all" | med)
cpu=$(awk '{ print $5 }' "$out/all" | med)
sw=$(awk '{ print $6 }' "$out/all" | med)
printf "bare server %s ns CPU a request, recorded %s (%+.0f%%); the server's thread switches a request %s\n" "$bare" "$cpu" \
	"$(awk -v a="$cpu" -v b="$bare" 'BEGIN { print (a / b - 1) * 100 }')" "$sw"
echo "| program | runs a request | ns a run | ns a request | share of the bare server's CPU a request |"
echo "|---|---|---|---|---|"
for p in $(awk '{ print $1 }' "$out/all" | sort -u); do
	awk -v p="$p" -v n="$requests" '$1 == p { print $2 / (2 * n), ($2 ? $3 / $2 : 0), $3 / (2 * n), $4 }' "$out/all" >"$out/one"
	printf "| %s | %.2f | %.0f | %.0f | %.1f%% |\n" "$p" "$(awk '{ print $1 }' "$out/one" | med)" "$(awk '{ print $2 }' "$out/one" | med)" \
		"$(awk '{ print $3 }' "$out/one" | med)" "$(awk '{ print $3 / $4 * 100 }' "$out/one" | med)"
done
