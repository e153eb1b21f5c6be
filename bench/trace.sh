#!/usr/bin/env bash
# Per-call cost of tracing one function (entry and return), by tracer: the
# run time of a program making N calls of a small function, traced minus
# untraced, divided by N; the median of REPS runs each. Tracers: a bare
# uprobe+uretprobe pair whose BPF programs do nothing (bench/bareprobe, the
# floor), culprit trace, bpftrace (start time per thread in a map, the
# duration into a histogram; and printing each call), uftrace (dynamic
# patching). Needs root, gcc, go; bpftrace and uftrace when installed
# (Debian packages of those names).
#
#   bench/trace.sh [N] [REPS]
set -euo pipefail
n=${1:-200000}
reps=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/trace
mkdir -p "$out"
gcc -O2 -g -pthread -o "$out/tracecalls" "$root/testdata/targets/tracecalls.c"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit && go build -o "$out/bareprobe" ./bench/bareprobe)
bin=$out/tracecalls
cmd=("$bin" leaf "$n")

# run NAME CMD...: the median wall time in ns of REPS runs.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() {
	local t0 t1
	for _ in $(seq "$reps"); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
		t1=$(date +%s%N)
		echo $((t1 - t0))
	done | median
}

base=$(time_runs "${cmd[@]}")
printf "%-22s %12s %14s %10s\n" tracer "median ms" "per call µs" "vs bare"
printf "%-22s %12.1f %14s %10s\n" "untraced" "$(echo "$base/1000000" | bc -l)" "-" "-"
bare=""
row() {
	local name=$1 t
	shift
	if ! t=$(time_runs "$@"); then
		printf "%-22s %12s\n" "$name" "failed"
		return
	fi
	local per
	per=$(echo "($t - $base) / $n / 1000" | bc -l)
	[ -z "$bare" ] && bare=$per
	printf "%-22s %12.1f %14.2f %10.2f\n" "$name" "$(echo "$t/1000000" | bc -l)" "$per" "$(echo "$per / $bare" | bc -l)"
}
row "bare uprobe+uretprobe" "$out/bareprobe" "$bin" leaf -- "${cmd[@]}"
row "culprit trace" "$out/culprit" trace -f leaf -o "$out/t.rec" -- "${cmd[@]}"
row "culprit trace --args" "$out/culprit" trace -f leaf --args -o "$out/t.rec" -- "${cmd[@]}"
if command -v bpftrace >/dev/null; then
	row "bpftrace (histogram)" bpftrace -e "uprobe:$bin:leaf { @s[tid] = nsecs; } uretprobe:$bin:leaf /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }" -c "${cmd[*]}"
	row "bpftrace (each call)" bpftrace -e "uprobe:$bin:leaf { @s[tid] = nsecs; } uretprobe:$bin:leaf /@s[tid]/ { printf(\"%d %d\\n\", tid, nsecs - @s[tid]); delete(@s[tid]); }" -c "${cmd[*]}"
fi
if command -v uftrace >/dev/null; then
	row "uftrace (dynamic)" uftrace record -d "$out/uftrace.data" -P leaf "${cmd[@]}"
fi
echo "N=$n calls of leaf(10), median of $reps runs; $(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
