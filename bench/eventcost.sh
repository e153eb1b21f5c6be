#!/bin/bash
# eventcost.sh [RUNS] [REQUESTS]: the throughput a syscall-heavy loopback
# server keeps while culprit records it with scheduler and system-call
# events (the target: events cost at most 10% of a server's throughput).
#
# The server ($SERVER) is redis (the default) or memcached. redis is
# Debian's redis 7.0.15 built from source (-O2 -g) by
# bench/bugs/redis-keys-glob/build.sh (its regression only slows KEYS with
# glob patterns, which this load never sends), or the redis-server and
# redis-benchmark found in $REDIS_DIR. redis-benchmark drives SET and GET
# over loopback (8 clients, no pipelining: two system calls or more per
# request). memcached is Debian's memcached 1.6.18 built from source (-O2
# -g, no frame pointers) by bench/bugs/memcached-auth-spin/build.sh (its
# regression is in ASCII authentication, which this server runs without),
# or the memcached and mcload found in $MEMCACHED_DIR; it runs 2 worker
# threads, and mcload drives it with 8 client threads, each a connection
# sending set/get pairs and awaiting each reply (REQUESTS pairs in all:
# 2 × REQUESTS requests, as redis-benchmark's SET and GET). Each
# configuration runs RUNS times, interleaved; the table
# gives the median requests per second of SET and GET together and its
# loss against bare's median, the paired loss (the median over the rounds
# of each run's loss against the bare run of its round, with a 95%
# confidence interval of that median from the rounds' order statistics:
# the target is met in a run whose whole interval lies above -10%), the
# server's own CPU time per request, and the events
# recorded and lost (median). The -bpf configurations record the events
# with culprit's BPF program (the default), the others with perf's
# tracepoint events (--perf-events); all-bpf records at most 5,000 system
# calls a second per thread (the default --syscall-limit) in the default
# --syscall-windows auto (as all-bpf-auto), all-bpf-every
# every call, all-bpf-N at most N, all-bpf-winN only in windows of N ms of
# every 100 ms (--syscall-windows), all-bpf-win20of200 in windows of 20 ms
# of every 200 ms (the same share, half the attachments: what auto uses),
# all-bpf-win40of400 in windows of 40 ms of every 400 ms (half again),
# all-bpf-win10of200 in windows of 10 ms of every 200 ms (half auto's
# share, as many attachments), all-bpf-win20of400 in windows of 20 ms of
# every 400 ms (half the share and half the attachments),
# all-bpf-auto in windows of 20 ms of every 200 ms while the server makes
# more than 20,000 calls a second and every call below
# (--syscall-windows auto), all-bpf-off all along
# (--syscall-windows off), all-bpf-wakeup as all-bpf with wakeup events
# (perf's sched_waking events on the traced threads, with their stacks,
# and the BPF program on sched_waking and sched_wakeup_new for the wake-ups
# others make of them); the table then also gives the calls
# recorded of those made (median; "~": the windows' estimate of those
# made). CPU time comes from culprit's per-CPU
# cpu-clock events (the default); the -thread configurations use the
# threads' own events instead (--per-thread-clock), as perf record does:
# perf is `perf record -F 999 -g` (per-thread events, inherited) and
# perf-a `perf record -a -F 999 -g` (per-CPU events, every process of the
# machine recorded), each with its samples and lost records from perf's
# own count; bpftrace is bpftrace's per-CPU profile probe at 999 Hz kept
# for the server by a filter, each stack counted in a map (its samples
# from the map's counts): what per-CPU sampling through BPF costs with no
# recorder behind it; perf-dummy is `perf record -e dummy` (inherited
# dummy events on the server's threads, which sample nothing: what an
# event on a thread costs its switches) and perf-dummy-a `perf record -a -e
# dummy` (one per CPU); ticker and ticker-100 run bench/ticker (a thread
# per CPU waking 999 or 100 times a second and doing nothing: what a
# process waking on the CPUs at a profiler's rate costs the server, with
# no perf event at all); cpu-99, all-bpf-99, sched-bpf-99 and bpftrace-99
# are cpu, all-bpf, sched-bpf and bpftrace at 99 Hz
# (what is left at a tenth of the ticks); cpu-tick and all-bpf-tick are
# cpu and all-bpf sampling at the scheduler's tick (-F tick: no timer
# interrupt of culprit's own, HZ samples a second); bare-again is the
# server bare again, later in the round than bare: the method's own bias
# and spread; bpftrace-sched adds to bpftrace
# a sched_switch probe counting both chains at each switch of the
# server's threads (the nearest bpftrace to --events cpu,sched) and
# bpftrace-switch0 one whose filter no thread passes (the floor of a
# program on every switch of the machine); bpftrace-tick counts the
# stacks at the scheduler's tick instead of at a timer of its own (no
# interrupt added; HZ samples a second, 250 on the project's machines).
# $CULPRIT names a culprit binary to use instead of building this tree's;
# $ORDER the configurations to run. With $BASE
# naming another culprit binary (an older build), each configuration X
# has a twin X@base recording with it, to pair two builds in one run:
# ORDER="bare all-bpf all-bpf@base". A run whose server does not start,
# or whose benchmark does not finish, stops the script with a message
# saying which and the ends of the server's log and the recorder's
# messages ($START_WAIT, $RUN_WAIT: see one below).
#
# Besides the server's CPU time per request over its whole life (its
# start-up included), the table gives it over the benchmark alone ("in
# the load"), and the recorder's own CPU time before the benchmark (its
# start-up, ms) and during it (µs per request): what it takes from the
# two CPUs the server and the benchmark share, and the load generator's
# CPU time per request (per-CPU events tick on its CPU too). $SETTLE seconds (default
# 0) are waited between the server accepting and the benchmark, to tell
# the recorder's start-up overlapping a short load from the load's cost.
# The last column is the share of the benchmark's time in which every
# system call was recorded (from the recording's windows,
# bench/windowshare; the rest in windows or between them).
set -euo pipefail
runs=${1:-5}
requests=${2:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/bench/out/eventcost}
mkdir -p "$out"
server=${SERVER:-redis}
case $server in
redis)
	redis=${REDIS_DIR:-$out/redis}
	if [ ! -x "$redis/redis-server" ]; then
		"$root/bench/bugs/redis-keys-glob/build.sh" "$redis"
	fi
	;;
memcached)
	mc=${MEMCACHED_DIR:-$out/memcached}
	if [ ! -x "$mc/memcached" ] || [ ! -x "$mc/mcload" ]; then
		"$root/bench/bugs/memcached-auth-spin/build.sh" "$mc"
	fi
	;;
*)
	echo "eventcost: SERVER must be redis or memcached" >&2
	exit 2
	;;
esac
culprit=${CULPRIT:-}
if [ -z "$culprit" ]; then
	culprit=$out/culprit
	(cd "$root" && go build -o "$culprit" ./cmd/culprit)
fi
(cd "$root" && go build -o "$out/windowshare" ./bench/windowshare && go build -o "$out/cputime" ./bench/cputime)
gcc -O2 -pthread -o "$out/ticker" "$root/bench/ticker/ticker.c"
c="$culprit record -o $out/run.rec"
declare -A cfg=(
	[bare]=""
	[bare-again]=""
	[cpu]="$c --"
	[sched]="$c --events cpu,sched --perf-events --"
	[wakeup]="$c --events cpu,wakeup --"
	[syscalls]="$c --events cpu,syscalls --perf-events --"
	[all]="$c --events cpu,syscalls,sched --perf-events --"
	[syscalls-user]="$c --events cpu,syscalls --syscall-user-stacks --perf-events --"
	[all-user]="$c --events cpu,syscalls,sched --syscall-user-stacks --perf-events --"
	[sched-bpf]="$c --events cpu,sched --"
	[syscalls-bpf]="$c --events cpu,syscalls --"
	[all-bpf]="$c --events cpu,syscalls,sched --"
	[all-bpf-every]="$c --events cpu,syscalls,sched --syscall-limit 0 --"
	[all-bpf-20000]="$c --events cpu,syscalls,sched --syscall-limit 20000 --"
	[all-bpf-2000]="$c --events cpu,syscalls,sched --syscall-limit 2000 --"
	[all-bpf-win10]="$c --events cpu,syscalls,sched --syscall-windows 10ms/100ms --"
	[all-bpf-win20]="$c --events cpu,syscalls,sched --syscall-windows 20ms/100ms --"
	[all-bpf-win20of200]="$c --events cpu,syscalls,sched --syscall-windows 20ms/200ms --"
	[all-bpf-win40of400]="$c --events cpu,syscalls,sched --syscall-windows 40ms/400ms --"
	[all-bpf-win10of200]="$c --events cpu,syscalls,sched --syscall-windows 10ms/200ms --"
	[all-bpf-win20of400]="$c --events cpu,syscalls,sched --syscall-windows 20ms/400ms --"
	[all-bpf-auto]="$c --events cpu,syscalls,sched --syscall-windows auto --"
	[all-bpf-off]="$c --events cpu,syscalls,sched --syscall-windows off --"
	[all-bpf-wakeup]="$c --events cpu,syscalls,sched,wakeup --"
	[cpu-thread]="$c --per-thread-clock --"
	[all-bpf-thread]="$c --events cpu,syscalls,sched --per-thread-clock --"
	[perf]="perf record -F 999 -g -o $out/perf.data --"
	[perf-a]="perf record -a -F 999 -g -o $out/perf.data --"
	[ticker]="$out/ticker 999 --"
	[ticker-100]="$out/ticker 100 --"
	[perf-dummy]="perf record -e dummy -o $out/perf.data --"
	[perf-dummy-a]="perf record -a -e dummy -o $out/perf.data --"
	[bpftrace]="$out/bpftrace-profile 999 --"
	[cpu-99]="$c -F 99 --"
	[all-bpf-99]="$c --events cpu,syscalls,sched -F 99 --"
	[sched-bpf-99]="$c --events cpu,sched -F 99 --"
	[cpu-tick]="$c -F tick --"
	[all-bpf-tick]="$c --events cpu,syscalls,sched -F tick --"
	[bpftrace-99]="$out/bpftrace-profile 99 --"
	[bpftrace-sched]="$out/bpftrace-sched all --"
	[bpftrace-switch0]="$out/bpftrace-sched none --"
	[bpftrace-tick]="$out/bpftrace-tick --"
)
# bpftrace's per-CPU profile probe at 999 Hz, kept for the server's
# process by its filter, each stack counted in a map: a BPF profiler's
# sampling with nothing of culprit's recorder, the nearest tool to
# culprit's per-CPU events.
cat >"$out/bpftrace-profile" <<EOF
#!/bin/bash
hz=\$1
shift 2 # the rate and the --
exec >/dev/null # bpftrace's blank lines at its end
exec bpftrace -q -o "$out/bpftrace.out" -e "profile:hz:\$hz /pid == cpid/ { @[kstack, ustack] = count(); }" -c "\$*"
EOF
chmod +x "$out/bpftrace-profile"
# bpftrace-sched: the same profile, and at each switch away of the
# server's threads both chains counted (what --events cpu,sched records
# there: the nearest bpftrace to it); bpftrace-switch0: a switch probe
# whose filter no thread passes, the floor of any program on every
# switch of the machine.
cat >"$out/bpftrace-sched" <<EOF
#!/bin/bash
case \$1 in
all) filter="pid == cpid" ;;
*) filter="pid == 0 && cpu > 1000000" ;;
esac
shift 2
exec >/dev/null
exec bpftrace -q -o "$out/bpftrace.out" -e "profile:hz:999 /pid == cpid/ { @[kstack, ustack] = count(); } tracepoint:sched:sched_switch /\$filter/ { @s[kstack, ustack] = count(); }" -c "\$*"
EOF
chmod +x "$out/bpftrace-sched"
# bpftrace-tick: the same stacks counted at the scheduler's own tick (the
# expiry of its hrtimer, HZ times a second on a busy CPU) instead of at a
# timer of the profiler's: a sampler that adds no interrupt.
tick=$(awk '$3 == "tick_nohz_handler" || $3 == "tick_sched_timer" { print "0x" $1; exit }' /proc/kallsyms)
cat >"$out/bpftrace-tick" <<EOF
#!/bin/bash
shift # the --
exec >/dev/null
exec bpftrace -q -o "$out/bpftrace.out" -e "tracepoint:timer:hrtimer_expire_entry /pid == cpid && args->function == ${tick:-0}/ { @[kstack, ustack] = count(); }" -c "\$*"
EOF
chmod +x "$out/bpftrace-tick"
if [ -n "${BASE:-}" ]; then
	for k in "${!cfg[@]}"; do
		[[ ${cfg[$k]} == "$c "* ]] && cfg[$k@base]="$BASE record -o $out/run.rec${cfg[$k]#"$c"}"
	done
fi
order=(${ORDER:-bare cpu sched sched-bpf syscalls syscalls-bpf all all-bpf})
case " ${order[*]} " in
*" bare "*) ;;
*)
	echo "eventcost: ORDER must include bare: every configuration is compared with it" >&2
	exit 2
	;;
esac

# fail MSG TMP: says why a run of the bench failed, with the ends of the
# server's log and of the recorder's messages, and stops the server.
fail() {
	echo "eventcost.sh: $1" >&2
	for f in "$2/log" "$2/culprit.err"; do
		if [ -s "$f" ]; then
			echo "--- last lines of $(basename "$f"):" >&2
			tail -5 "$f" >&2
		fi
	done
	[ -s "$2/pid" ] && kill -TERM "$(cat "$2/pid")" 2>/dev/null
	[ -n "${wrapper:-}" ] && kill -TERM "$wrapper" 2>/dev/null
	[ -n "${wrapper:-}" ] && wait "$wrapper" 2>/dev/null
	rm -rf "$2"
	exit 1
}

# freeport prints a loopback port below the kernel's ephemeral range (so
# no client connection holds it) on which nothing listens.
freeport() {
	local lo p
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
	[ "$lo" -gt 21000 ] || lo=40000
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % (lo - 20000)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	echo "eventcost.sh: no free port found between 20000 and $lo" >&2
	return 1
}

# cpuns PID: the CPU time of PID's live threads in nanoseconds (their
# schedstat), 0 if it has none (a thread that exits while it is read is
# left out).
cpuns() {
	{ cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{ n += $1 } END { printf "%.0f", n }'
}

# one CONFIG: runs the server under CONFIG, drives it, prints "rps events
# lost cpu calls". redis-benchmark waits for a server that never accepts
# its connections (one that failed to start: a port taken, a recorder that
# refused to start) spinning forever, and one that dies during the run is
# an error of its own: so the benchmark starts only once this run's server
# (its pidfile's process, alive) accepts connections, the wait ends with
# an error when the server or its recorder exits or after $START_WAIT
# seconds (default 120), and a benchmark still running after $RUN_WAIT
# seconds (default 60 plus one per 500 requests) is stopped with an error.
one() {
	local tmp port rps spid
	tmp=$(mktemp -d)
	port=$(freeport) || fail "$1: no port to run $server on" "$tmp"
	if [ "$server" = redis ]; then
		# shellcheck disable=SC2086
		${cfg[$1]} "$redis/redis-server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
			--pidfile "$tmp/pid" --dir "$tmp" --logfile "$tmp/log" 2>"$tmp/culprit.err" &
	else
		# shellcheck disable=SC2086
		${cfg[$1]} "$mc/memcached" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -P "$tmp/pid" -u root \
			>"$tmp/log" 2>"$tmp/culprit.err" &
	fi
	wrapper=$!
	local deadline=$((SECONDS + ${START_WAIT:-120}))
	while :; do
		if [ -s "$tmp/pid" ] && kill -0 "$(cat "$tmp/pid")" 2>/dev/null &&
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
		if ! kill -0 "$wrapper" 2>/dev/null; then
			wait "$wrapper"
			fail "$1: the server (or its recorder) exited with status $? before accepting connections on port $port" "$tmp"
		fi
		[ $SECONDS -lt "$deadline" ] ||
			fail "$1: $server did not accept connections on port $port within ${START_WAIT:-120} s" "$tmp"
		sleep 0.05
	done
	spid=$(cat "$tmp/pid")
	[ "${SETTLE:-0}" = 0 ] || sleep "$SETTLE"
	local s0 r0
	s0=$(cpuns "$spid")
	r0=$(cpuns "$wrapper")
	local t0 t1
	t0=$("$out/windowshare" now)
	if [ "$server" = redis ]; then
		"$out/cputime" "$tmp/client.cpu" "$redis/redis-benchmark" -h 127.0.0.1 -p "$port" -t set,get -n "$requests" -c 8 -r 100000 --csv >"$tmp/bench.csv" 2>"$tmp/bench.err" &
	else
		# mcload prints nothing: the wall time of its load is taken
		# around it (the wait below polls).
		(
			a=$("$out/windowshare" now)
			"$out/cputime" "$tmp/client.cpu" "$mc/mcload" -p "$port" -u bench -k secret -t 8 -s 1 -n $((requests / 8)) 2>"$tmp/bench.err"
			echo "$a $("$out/windowshare" now)" >"$tmp/bench.csv"
		) &
	fi
	local bench=$! limit=$((${RUN_WAIT:-$((60 + requests / 500))}))
	deadline=$((SECONDS + limit))
	while kill -0 "$bench" 2>/dev/null; do
		if [ $SECONDS -ge "$deadline" ]; then
			pkill -TERM -P "$bench" 2>/dev/null # redis-benchmark, under cputime
			kill -TERM "$bench" 2>/dev/null
			wait "$bench" 2>/dev/null
			fail "$1: the load generator did not finish $requests requests within $limit s (server on port $port $(kill -0 "$spid" 2>/dev/null && echo alive || echo gone))" "$tmp"
		fi
		sleep 0.2
	done
	wait "$bench" || fail "$1: the load generator failed ($(tail -1 "$tmp/bench.err"))" "$tmp"
	t1=$("$out/windowshare" now)
	local s1 r1
	s1=$(cpuns "$spid")
	r1=$(cpuns "$wrapper")
	if [ "$server" = redis ]; then
		rps=$(awk -F'"' '/^"(SET|GET)"/ { n++; s += $4 } END { if (n) printf "%.0f", s / n }' "$tmp/bench.csv")
		[ -n "$rps" ] || fail "$1: redis-benchmark printed no SET or GET rate ($(tail -1 "$tmp/bench.err"))" "$tmp"
	else
		rps=$(awk -v n="$requests" '{ printf "%.0f", 2 * int(n / 8) * 8 / (($2 - $1) / 1e9) }' "$tmp/bench.csv")
		[ -n "$rps" ] || fail "$1: mcload failed ($(tail -1 "$tmp/bench.err"))" "$tmp"
	fi
	# The server's own CPU time (user + system) per request: what each
	# event costs it, less sensitive to other load on the machine than
	# the throughput.
	local cpu
	cpu=$(awk -v n="$requests" -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz * 1e6 / (2 * n) }' "/proc/$spid/stat")
	kill -TERM "$spid"
	wait "$wrapper" || true
	local ev=0 lost=0 calls=-
	if [ "${1%-a}" = perf ]; then
		ev=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$tmp/culprit.err" | tail -1)
		lost=$(perf report -D -i "$out/perf.data" 2>/dev/null | awk '/PERF_RECORD_LOST/ { n += $NF } END { print n + 0 }')
	elif [[ $1 == bpftrace* ]]; then
		ev=$(awk '/\]: [0-9]+$/ { n += $NF } END { print n + 0 }' "$out/bpftrace.out")
	elif [ -n "${cfg[$1]}" ]; then
		ev=$(sed -n "s/.*: \([0-9]*\) samples.*written.*/\1/p" "$tmp/culprit.err" | tail -1)
		lost=$(grep -o '[0-9]* lost' "$tmp/culprit.err" | head -1 | cut -d' ' -f1 || true)
		calls=$(sed -n 's/.* \([0-9]*\) of \([0-9]*\) system calls recorded.*/\1\/\2/p' "$tmp/culprit.err" | head -1)
		# In windows: recorded/estimated~ (an estimate of the calls made).
		[ -n "$calls" ] || calls=$(sed -n 's/.*: \([0-9]*\) recorded stand for an estimated \([0-9]*\) calls.*/\1\/\2~/p' "$tmp/culprit.err" | head -1)
	fi
	# The server's CPU time per request during the benchmark only (its
	# start-up left out), and the recorder's own CPU time before the
	# benchmark (ms: its start-up) and during it (µs per request).
	local lcpu rstart rload
	lcpu=$(awk -v a="$s0" -v b="$s1" -v n="$requests" 'BEGIN { printf "%.2f", (b - a) / 1e3 / (2 * n) }')
	rstart=0 rload=0
	if [ "$wrapper" != "$spid" ]; then
		rstart=$(awk -v a="$r0" 'BEGIN { printf "%.0f", a / 1e6 }')
		rload=$(awk -v a="$r0" -v b="$r1" -v n="$requests" 'BEGIN { printf "%.2f", (b - a) / 1e3 / (2 * n) }')
	fi
	# The share of the benchmark's time in which every system call was
	# recorded (the windows' share is the rest, less between windows).
	local along=-
	if [[ ${cfg[$1]} == *"--events "*syscalls* && ${cfg[$1]} != *--perf-events* && ${1%-a} != perf ]]; then
		along=$("$out/windowshare" "$out/run.rec" "$t0" "$t1" |
			awk -v d="$((t1 - t0))" '{ printf "%.1f%%", $2 * 1e6 / d * 100 }')
	fi
	# The load generator's CPU time per request: per-CPU events tick on
	# its CPU too, and what the recorder takes of the two CPUs it may lose.
	local ccpu
	ccpu=$(awk -v n="$requests" '{ printf "%.2f", $1 * 1e6 / (2 * n) }' "$tmp/client.cpu")
	echo "$rps ${ev:-0} ${lost:-0} $cpu ${calls:--} $lcpu $rstart $rload $along $ccpu"
	rm -rf "$tmp"
}

declare -A res
start="$(date -u +%H:%M), load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Each round runs every configuration, bare included, in an order rotated
# from round to round, so that each takes each place in a round as often:
# a run's place weighs on it (on memcached the configuration run right
# after bare lost up to 7 points more than the same one run later,
# 2026-12-06; with bare always first, bare-again, the server bare later in
# the round, lost 8.8% against bare's median and 3.7% paired, 2026-12-07),
# and a fixed place favours whichever holds the better one.
for ((r = 0; r < runs; r++)); do
	round=()
	for ((i = 0; i < ${#order[@]}; i++)); do
		round+=("${order[(i + r) % ${#order[@]}]}")
	done
	for k in "${round[@]}"; do
		line=$(one "$k") || exit 1
		res[$k]+="$line"$'\n'
		echo "$((r + 1)) $k $line" >>"$out/runs.log" # each run's figures, as they come
	done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# medianci prints the median of its input's numbers and a 95% confidence
# interval of it that assumes nothing of their distribution: the k-th
# least and greatest, k the most for which fewer than k of n values fall
# below the median with a chance of at most 2.5% (binomial, p = 1/2); the
# interval covers 95% or more. With fewer than 6 values there is none:
# the least and greatest are given.
medianci() {
	sort -n | awk '{ v[NR] = $1 }
	END {
		n = NR; k = 1; c = 0; p = 0.5 ^ n
		# c: the chance that at most i values fall below the median.
		for (i = 0; i < n; i++) {
			c += p; p = p * (n - i) / (i + 1)
			if (c > 0.025) break
			k = i + 1
		}
		print v[int((n + 1) / 2)], v[k], v[n - k + 1]
	}'
}
base=$(printf '%s' "${res[bare]}" | awk '{ print $1 }' | median)
basecpu=$(printf '%s' "${res[bare]}" | awk '{ print $4 }' | median)
printf "%s SET+GET, %d requests, 8 clients, %d runs (%s)\n" "$server" "$requests" "$runs" "$(date -u +%F)"
printf "from %s to %s, load average %s\n" "$start" "$(date -u +%H:%M)" "$(cut -d' ' -f1-3 /proc/loadavg)"
baseload=$(printf '%s' "${res[bare]}" | awk '{ print $6 }' | median)
baseclient=$(printf '%s' "${res[bare]}" | awk '{ print $10 }' | median)
printf "| configuration | requests/s | loss | paired loss (95%% CI) | server CPU µs/request | vs bare | in the load | vs bare | recorder CPU ms before the load | µs/request in it | load generator CPU µs/request | vs bare | events recorded | lost | system calls recorded | every call recorded, share of the load |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
for k in "${order[@]}"; do
	rps=$(printf '%s' "${res[$k]}" | awk '{ print $1 }' | median)
	ev=$(printf '%s' "${res[$k]}" | awk '{ print $2 }' | median)
	lost=$(printf '%s' "${res[$k]}" | awk '{ print $3 }' | median)
	cpu=$(printf '%s' "${res[$k]}" | awk '{ print $4 }' | median)
	calls=$(printf '%s' "${res[$k]}" | awk '{ print $5 }' | sort -t/ -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	lcpu=$(printf '%s' "${res[$k]}" | awk '{ print $6 }' | median)
	rstart=$(printf '%s' "${res[$k]}" | awk '{ print $7 }' | median)
	rload=$(printf '%s' "${res[$k]}" | awk '{ print $8 }' | median)
	along=$(printf '%s' "${res[$k]}" | awk '{ print $9 }' | median)
	ccpu=$(printf '%s' "${res[$k]}" | awk '{ print $10 }' | median)
	# Each run against the bare run of its round, then the median: the
	# machine's drift between rounds (±5% here) cancels out.
	read -r paired plo phi < <(paste <(printf '%s' "${res[bare]}" | awk '{ print $1 }') <(printf '%s' "${res[$k]}" | awk '{ print $1 }') |
		awk '{ printf "%.5f\n", ($2 / $1 - 1) * 100 }' | medianci)
	printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$k" "$rps" \
		"$(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }')" \
		"$(awk -v a="$paired" -v l="$plo" -v h="$phi" 'BEGIN { printf "%+.1f%% (%+.1f to %+.1f)", a, l, h }')" "$cpu" \
		"$(awk -v a="$cpu" -v b="$basecpu" 'BEGIN { printf "%+.0f%%", (a / b - 1) * 100 }')" \
		"$lcpu" "$(awk -v a="$lcpu" -v b="$baseload" 'BEGIN { printf "%+.0f%%", (a / b - 1) * 100 }')" \
		"$rstart" "$rload" "$ccpu" "$(awk -v a="$ccpu" -v b="$baseclient" 'BEGIN { printf "%+.0f%%", (a / b - 1) * 100 }')" \
		"$ev" "$lost" "$calls" "$along"
done
