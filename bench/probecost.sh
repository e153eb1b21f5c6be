#!/usr/bin/env bash
# Where a traced call's time goes: the CPU time a uprobe costs the traced
# program per call, by the probed function's first instruction (the one a
# uprobe replaces) and by probe: entry only, return only (a uretprobe also
# traps at the entry, to take the return address), both, culprit
# trace's programs (shadow stack, one ring record per call) with and
# without on-CPU time (--no-cpu-time); and the CPU
# culprit itself spends per call (reading the ring, writing the
# recording). The traced program (bench/probecost/probecalls) measures its
# own CPU time, so the figures hold on a busy machine; the median of REPS
# runs. Needs root, gcc, go.
#
#   bench/probecost.sh [N] [REPS] [FIRST...]   (FIRST: push nop5 endbr mov test sub cet)
set -euo pipefail
n=${1:-100000}
reps=${2:-5}
shift 2 || true
firsts=("$@")
[ ${#firsts[@]} -gt 0 ] || firsts=(push nop5 endbr mov cet)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/probecost
mkdir -p "$out"
gcc -O2 -o "$out/probecalls" "$root/bench/probecost/probecalls.c" "$root/bench/probecost/first.S"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit && go build -o "$out/bareprobe" ./bench/bareprobe)
bin=$out/probecalls
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# cpu PREFIX...: the median CPU µs of the traced program, and of
# everything (PREFIX and program), "prog total".
cpu() {
	local f=$1
	shift
	for _ in $(seq "$reps"); do
		/usr/bin/time -f "time %U %S" -o "$out/time" "$@" "$bin" "$f" "$n" >"$out/prog" 2>/dev/null
		p=$(awk '/^cpu_us/ { print $2 }' "$out/prog")
		t=$(awk '/^time/ { printf "%d", ($2 + $3) * 1000000 }' "$out/time")
		echo "$p $t"
	done | sort -n | awk '{p[NR]=$1; t[NR]=$2} END {m=int((NR+1)/2); print p[m], t[m]}'
}
printf "%-6s %-22s %16s %20s\n" first probe "program µs/call" "tracer's own µs/call"
for f in "${firsts[@]}"; do
	read -r b _ < <(cpu "$f")
	row() {
		local name=$1 p t
		shift
		read -r p t < <(cpu "$f" "$@")
		awk -v name="$name" -v f="$f" -v p="$p" -v t="$t" -v b="$b" -v n="$n" \
			'BEGIN { printf "%-6s %-22s %16.2f %20.2f\n", f, name, (p - b) / n, (t - p) / n }'
	}
	row "entry" "$out/bareprobe" -entry "$bin" "f_$f" --
	row "return" "$out/bareprobe" -return "$bin" "f_$f" --
	row "entry+return" "$out/bareprobe" "$bin" "f_$f" --
	row "culprit trace" "$out/culprit" trace -f "f_$f" -o "$out/t.rec" --
	row "trace --no-cpu-time" "$out/culprit" trace --no-cpu-time -f "f_$f" -o "$out/t.rec" --
done
echo "N=$n calls, median of $reps runs; $(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
