#!/usr/bin/env bash
# Paired rounds of culprit trace and bpftrace on one function of
# bench/probecost's program, for functions whose traps dwarf the tracers'
# own work (one that begins with endbr64 costs 13-23 us a call in traps,
# the programs well under 1 us): a run's figure moves by more than the two
# tracers differ, so probecost.sh's few rounds do not tell them apart. Each
# round runs, in turn, `culprit trace -f f_FIRST` as a build's first trace
# (no statistics of the build) and bpftrace's histogram script of
# probecost.sh, on `probecalls FIRST N`, and reads the program's own CPU
# time per call. Prints each round, then how many rounds culprit was
# faster in, the median of the rounds' ratios culprit/bpftrace and its 95%
# interval (the sign test's order statistics). Needs root, gcc, go and
# bpftrace.
#
#   bench/tracevsbpftrace.sh [ROUNDS] [FIRST] [N]   (FIRST: push nop5 endbr mov test sub cet)
set -euo pipefail
rounds=${1:-41}
first=${2:-endbr}
n=${3:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/tracevsbpftrace
mkdir -p "$out"
command -v bpftrace >/dev/null || { echo "tracevsbpftrace: bpftrace is not installed (Debian package bpftrace)" >&2; exit 2; }
gcc -O2 -o "$out/probecalls" "$root/bench/probecost/probecalls.c" "$root/bench/probecost/first.S"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit)
bin=$out/probecalls
export CULPRIT_TRACE_STATS=$out/stats
percall() { awk '/^cpu_us/ {printf "%.3f", $2 / '"$n"'}' "$out/prog"; }
for r in $(seq "$rounds"); do
	rm -rf "$out/stats"
	"$out/culprit" trace -f "f_$first" -o "$out/t.rec" -- "$bin" "$first" "$n" >"$out/prog" 2>"$out/err" ||
		{ cat "$out/err" >&2; exit 1; }
	c=$(percall)
	bpftrace -e "uprobe:$bin:f_$first { @s[tid] = nsecs; } uretprobe:$bin:f_$first /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }" \
		-c "$bin $first $n" >"$out/prog" 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
	b=$(percall)
	echo "round $r: culprit $c µs/call, bpftrace $b"
done | tee "$out/rounds"
awk '{c = $4; b = $7; print c / b, (c < b)}' "$out/rounds" | sort -n | awk '
	{ r[NR] = $1; w += $2 }
	END {
		n = NR; lo = int(n / 2 - 0.98 * sqrt(n) + 0.999); if (lo < 1) lo = 1
		printf "culprit faster in %d of %d rounds; median ratio culprit/bpftrace %.3f, 95%% interval %.3f..%.3f\n", w, n, r[int((n + 1) / 2)], r[lo], r[n + 1 - lo]
	}'
echo "f_$first, N=$n calls a run; $(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
