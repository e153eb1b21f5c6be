#!/usr/bin/env bash
# The throughput cost of culprit variance --sched on a C server, paired.
#
# memcached as bench/variance.sh builds it (run that first: it leaves the
# server and its load generator, mcmix, in OUT, default
# bench/out/variance), 2 worker threads, serves mcmix over loopback (2
# clients, gets one after another, one in ten for a 512 KiB value) for
# SECONDS, under culprit variance --start drive_machine --rounds 1
# --trap-budget 0 (every call of drive_machine traced), without and with
# --sched (the BPF programs on the scheduler's switches and wake-ups, and
# the wake-ups' stacks). Each run measures both, one after the other, the
# order alternating from run to run; the report is each run's throughput
# (gets a second) and the server's CPU per get, the ratio sched/plain of
# each, their medians, and the machine's load average at each
# measurement's start. A loaded machine moves the throughput far more
# than the CPU per get.
#
#   bench/variance-sched.sh [-o OUT] [-r RUNS] [-d SECONDS] [-c CULPRIT] [-P]
#
# -c runs another culprit binary (default: built from this tree). -P pins
# the server's threads to CPU 0, mcmix and culprit to CPU 1: where the
# scheduler places the server's and the clients' threads otherwise moves
# the throughput by tens of percent from run to run on a busy machine.
#
# Needs root and a built bench/out/variance.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/variance
runs=3
secs=10
bin=
pin=
while getopts "o:r:d:c:P" opt; do
	case $opt in
	o) out=$OPTARG ;;
	r) runs=$OPTARG ;;
	d) secs=$OPTARG ;;
	c) bin=$OPTARG ;;
	P) pin=1 ;;
	*) echo "usage: bench/variance-sched.sh [-o OUT] [-r RUNS] [-d SECONDS] [-c CULPRIT] [-P]" >&2; exit 2 ;;
	esac
done
mc=$out/memcached/src/memcached
[ -x "$mc" ] && [ -x "$out/mcmix" ] || { echo "no $mc or $out/mcmix: run bench/variance.sh first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/culprit-vsched-XXXXXX)
server= prefix_pid=
cleanup() {
	[ -n "$server" ] && kill -TERM "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "$bin" ]; then cp "$bin" "$tmp/culprit"; else (cd "$root" && go build -o "$tmp/culprit" ./cmd/culprit); fi
on1=()
[ -n "$pin" ] && on1=(taskset -c 1)

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

# measure CONFIG: sets ops (gets/s) and scpu (the server's CPU, µs a get).
measure() {
	local flags=(--start drive_machine --rounds 1 --trap-budget 0 -o "$tmp/v.rec")
	[ "$1" = sched ] && flags=(--sched "${flags[@]}")
	local port=$((20000 + RANDOM % 20000))
	rm -f "$tmp/mc.pid"
	"${on1[@]}" "$tmp/culprit" variance "${flags[@]}" -- "$mc" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -u root -P "$tmp/mc.pid" >"$tmp/log" 2>&1 &
	prefix_pid=$!
	for _ in $(seq 1 600); do
		if [ -s "$tmp/mc.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			server=$(cat "$tmp/mc.pid")
			break
		fi
		kill -0 "$prefix_pid" 2>/dev/null || { echo "memcached exited early:" >&2; cat "$tmp/log" >&2; exit 1; }
		sleep 0.1
	done
	[ -n "$server" ] || { echo "memcached did not start listening" >&2; exit 1; }
	[ -n "$pin" ] && taskset -a -p -c 0 "$server" >/dev/null
	local s0 n
	s0=$(cpu "$server")
	n=$("${on1[@]}" "$out/mcmix" -p "$port" -t 2 -d "$secs")
	ops=$(awk '{ print $6 }' <<<"$n")
	scpu=$(awk -v a="$s0" -v b="$(cpu "$server")" -v n="$(awk '{ print $2 }' <<<"$n")" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
	kill -TERM "$server"
	wait "$prefix_pid" || true
	server=
}

echo "memcached under culprit variance --start drive_machine, plain and --sched; mcmix -t 2 -d $secs; $runs runs; $(nproc) CPUs${pin:+, pinned (server CPU 0, mcmix and culprit CPU 1)}; $(date -u +%FT%TZ)"
printf "%-4s %-6s %10s %10s  %s\n" run config gets/s cpu_us/get load
rs=() cs=()
for ((r = 1; r <= runs; r++)); do
	order=(plain sched)
	[ $((r % 2)) -eq 0 ] && order=(sched plain)
	declare -A o=() c=()
	for cfg in "${order[@]}"; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		measure "$cfg"
		o[$cfg]=$ops c[$cfg]=$scpu
		printf "%-4s %-6s %10s %10s  %s\n" "$r" "$cfg" "$ops" "$scpu" "$load"
	done
	rs+=("$(awk -v a="${o[sched]}" -v b="${o[plain]}" 'BEGIN { printf "%.3f", a / b }')")
	cs+=("$(awk -v a="${c[sched]}" -v b="${c[plain]}" 'BEGIN { printf "%.3f", a / b }')")
	echo "run $r: throughput sched/plain ${rs[-1]}, CPU per get sched/plain ${cs[-1]}"
	unset o c
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# boot RATIO...: a 95% bootstrap interval of the median (2000 resamples).
boot() {
	printf '%s\n' "$@" | awk 'function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{ v[NR] = $1 } END { srand(1); for (b = 1; b <= 2000; b++) { for (i = 1; i <= NR; i++) s[i] = v[int(rand() * NR) + 1]; m[b] = med(s, NR) } med(m, 2000); printf "%.3f-%.3f", m[50], m[1950] }'
}
echo "median throughput ratio sched/plain $(med "${rs[@]}"), 95% bootstrap interval $(boot "${rs[@]}") (runs: ${rs[*]})"
echo "median CPU per get ratio sched/plain $(med "${cs[@]}"), 95% bootstrap interval $(boot "${cs[@]}") (runs: ${cs[*]})"
