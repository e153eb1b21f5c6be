#!/bin/bash
# recordercpu.sh [REQUESTS] [RECORD ARGS...]: where culprit record's own CPU
# goes while it records a syscall-heavy server. The server and load are
# bench/eventcost.sh's (redis SET/GET over loopback, 8 clients; $REDIS_DIR
# or built once); culprit is $CULPRIT or this tree's build; the record
# arguments default to `--events cpu,syscalls,sched`. perf record -g samples
# the recorder (all its threads) during the load, and each sample is put in
# the first part of this list its stack passes through:
#   windows   syscallprog's cycle: attaching and detaching the system call
#             programs (the kernel rewriting the tracepoints' calls and keys)
#   sysmon    the Go runtime's monitor thread
#   gc        the garbage collector (its workers, sweeping, allocation)
#   unwind    completing user call chains from the stack copies
#   write     encoding and writing the recording
#   bpf-ring  reading the system call program's ring
#   counts    the program's counters and windows read at each round
#   events    the rest of the system call program's records' handling
#   perf      reading the perf rings and the rest of a drain round
#   wait      waiting for the rings (poll) between rounds
#   runtime   the rest of the Go scheduler (threads parked and woken)
# and prints the share of each, the recorder's CPU time in the load and per
# event recorded. With PROFILE=0 perf is left out: the CPU figures alone,
# without perf's own cost on the recorder (to compare two builds: run it
# alternately with CULPRIT set to each).
set -euo pipefail
requests=${1:-100000}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--events cpu,syscalls,sched)
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/bench/out/recordercpu}
mkdir -p "$out"
redis=${REDIS_DIR:-$root/bench/out/eventcost/redis}
if [ ! -x "$redis/redis-server" ]; then
	"$root/bench/bugs/redis-keys-glob/build.sh" "$redis"
fi
culprit=${CULPRIT:-}
if [ -z "$culprit" ]; then
	culprit=$out/culprit
	(cd "$root" && go build -o "$culprit" ./cmd/culprit)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + RANDOM % 10000))
"$culprit" record -o "$tmp/run.rec" "${args[@]}" -- "$redis/redis-server" --port "$port" \
	--bind 127.0.0.1 --save "" --appendonly no --pidfile "$tmp/pid" --dir "$tmp" \
	--logfile "$tmp/log" 2>"$tmp/err" &
rec=$!
for _ in $(seq 1 2400); do
	[ -s "$tmp/pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	kill -0 "$rec" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
	sleep 0.05
done
spid=$(cat "$tmp/pid")
cpuns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ n += $1 } END { printf "%.0f", n }'; }
perfpid=
if [ "${PROFILE:-1}" != 0 ]; then
	perf record -q -F 1999 -g -p "$rec" -o "$tmp/perf.data" 2>/dev/null &
	perfpid=$!
fi
r0=$(cpuns "$rec")
start="$(date -u +'%F %H:%M'), load average $(cut -d' ' -f1 /proc/loadavg)"
"$redis/redis-benchmark" -h 127.0.0.1 -p "$port" -t set,get -n "$requests" -c 8 -r 100000 -q >/dev/null
r1=$(cpuns "$rec")
if [ -n "$perfpid" ]; then
	kill -INT "$perfpid"
	wait "$perfpid" || true
fi
kill -TERM "$spid"
wait "$rec" || true
events=$(sed -n 's/.*: \([0-9]*\) samples.*written.*/\1/p' "$tmp/err" | tail -1)
echo "culprit record ${args[*]}, redis SET+GET, $requests requests, $start"
awk -v a="$r0" -v b="$r1" -v n="$requests" -v ev="${events:-0}" 'BEGIN {
	printf "recorder CPU in the load: %.0f ms, %.2f µs per request, %.2f µs per event recorded (%d events)\n",
		(b - a) / 1e6, (b - a) / 1e3 / (2 * n), ev ? (b - a) / 1e3 / ev : 0, ev }'
[ -n "$perfpid" ] || exit 0
perf script -i "$tmp/perf.data" -F ip,sym 2>/dev/null | awk '
function classify(s) {
	if (s ~ /syscallprog\.\(\*Tracer\)\.cycle/) return "windows"
	if (s ~ /runtime\.sysmon/) return "sysmon"
	if (s ~ /runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssistAlloc|mallocgc)/) return "gc"
	if (s ~ /unwindChain/) return "unwind"
	if (s ~ /recording\.\(\*Writer\)|recorder\.\(\*session\)\.write/) return "write"
	if (s ~ /syscallprog\.\(\*Tracer\)\.Drain/) return "bpf-ring"
	if (s ~ /syscallprog\.\(\*Tracer\)\.(count|Windows|Lost)|writeWindows/) return "counts"
	if (s ~ /recorder\.\(\*session\)\.(drainSyscalls|syscall)/) return "events"
	if (s ~ /recorder\.\(\*session\)\.drain/) return "perf"
	if (s ~ /recorder\.\(\*session\)\.wait/) return "wait"
	if (s ~ /runtime\.(mstart|mcall|schedule|park_m)/) return "runtime"
	return "other"
}
NF == 0 { if (st != "") { c[classify(st)]++; n++ }; st = ""; next }
{ st = st " " $0 }
END {
	if (st != "") { c[classify(st)]++; n++ }
	for (k in c) printf "%6.1f%%  %s\n", 100 * c[k] / n, k | "sort -rn"
	close("sort -rn")
	printf "(%d samples of the recorder)\n", n
}'
