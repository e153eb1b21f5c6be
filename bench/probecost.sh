#!/usr/bin/env bash
# Where a traced call's time goes: the CPU time a uprobe costs the traced
# program per call, by the probed function's first instruction (the one a
# uprobe replaces) and by probe: entry only, return only (a uretprobe also
# traps at the entry, to take the return address), both, the entry with
# its return taken by a uprobe on the RET instruction instead (as culprit
# trace's return probes of Go code are: "entry+RET insn"), culprit
# trace's programs (shadow stack, call records batched per thread) with and
# without on-CPU time (--no-cpu-time), and without the CPU samples it
# takes beside its probes by default (--cpu-sample 0: each sample is a
# timer interrupt of the traced program, which bpftrace does not take,
# so this row is the tracer alone against bpftrace's; at 99 Hz, the
# default of a build's first trace and once its pool of samples is
# full, "culprit trace" here; and at 999 Hz, the most a later trace's
# default takes); a build's later trace at its default rate ("trace, a
# later trace": first, untimed, a trace of the same build at 999 Hz
# that probes a function the program does not call while it calls
# f_FIRST 10^8 times unprobed, so that the timed trace reads a pool of
# one trace with samples of the program's own code, and this machine's
# cost of a sample measured at that trace's end (a trace of f_FIRST
# itself pools none: its samples fall in the traps, where probecalls
# spends nearly all its time, and one with none pools nothing); said
# when it pooled no sample, which leaves the timed one a first trace);
# and the CPU
# culprit itself spends per call (reading the ring, writing the
# recording); and, when installed (Debian packages of those names),
# bpftrace (start time per thread in a map, the duration into a histogram;
# and printing each call) and uftrace (patches the code in the process:
# -P on a build without -pg, through its disassembler; it runs a build
# of the program whose f_nop5 nop is written so that uftrace does not
# take the whole program for one built with -pg -mnop-mcount, first.S;
# a function it cannot patch is said, with uftrace's own line).
# The traced program (bench/probecost/probecalls) measures its own CPU
# time, so the figures hold on a busy machine; the configurations run in
# turn, REPS rounds, and each figure is its median. "vs bare" is a
# configuration's cost per call over the bare entry+return pair's. With
# BASE=PATH (another build of culprit, e.g. main's) its trace rows run
# too, in the same rounds, so that two builds are compared side by side.
# probecalls-unwinds is the same program linked with a C++ unit that
# throws (bench/probecost/unwinds.cc): in an object that unwinds, a
# function that calls something gets its return probes on its RET
# instructions, a leaf keeps its uretprobe (docs/trace.md). "trace, leaf
# in unwinder" traces f_FIRST there (a leaf); with FIRST push, "trace,
# non-leaf" and "trace, RET probes" trace c_push (f_push with a call to
# an untraced leaf in it) in probecalls and in probecalls-unwinds, so the
# last two rows differ only by the return probe. Needs root, gcc, g++, go.
#
#   [BASE=culprit] bench/probecost.sh [N] [REPS] [FIRST...]   (FIRST: push nop5 endbr mov test sub cet)
set -euo pipefail
n=${1:-100000}
reps=${2:-5}
shift 2 || true
firsts=("$@")
[ ${#firsts[@]} -gt 0 ] || firsts=(push nop5 endbr mov cet)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/probecost
mkdir -p "$out"
export CULPRIT_TRACE_STATS=$out/stats
gcc -O2 -o "$out/probecalls" "$root/bench/probecost/probecalls.c" "$root/bench/probecost/first.S"
gcc -O2 -c -o "$out/probecalls.o" "$root/bench/probecost/probecalls.c"
gcc -O2 -DNOP5_OTHER -o "$out/probecalls-uftrace" "$root/bench/probecost/probecalls.c" "$root/bench/probecost/first.S"
g++ -O2 -o "$out/probecalls-unwinds" "$out/probecalls.o" "$root/bench/probecost/first.S" "$root/bench/probecost/unwinds.cc"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit && go build -o "$out/bareprobe" ./bench/bareprobe)
bin=$out/probecalls
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# One configuration a line: its name, then the command put before the
# program (none: untraced).
configs() {
	local f=$1
	echo "untraced|"
	echo "entry|$out/bareprobe -entry $bin f_$f --"
	echo "return|$out/bareprobe -return $bin f_$f --"
	echo "entry+return|$out/bareprobe $bin f_$f --"
	echo "entry+RET insn|$out/bareprobe -ret-insn $bin f_$f --"
	echo "culprit trace|$out/culprit trace -f f_$f -o $out/t.rec --"
	echo "trace --no-cpu-time|$out/culprit trace --no-cpu-time -f f_$f -o $out/t.rec --"
	echo "trace --cpu-sample 0|$out/culprit trace --cpu-sample 0 -f f_$f -o $out/t.rec --"
	echo "trace --cpu-sample 99|$out/culprit trace --cpu-sample 99 -f f_$f -o $out/t.rec --"
	echo "trace --cpu-sample 999|$out/culprit trace --cpu-sample 999 -f f_$f -o $out/t.rec --"
	echo "trace, a later trace|LATER $out/culprit trace -f f_$f -o $out/t.rec --"
	echo "trace, leaf in unwinder|UNWINDS $out/culprit trace -f f_$f -o $out/t.rec --"
	if [ "$f" = push ]; then
		echo "trace, non-leaf|CPUSH $out/culprit trace -f c_push -o $out/t.rec --"
		echo "trace, RET probes|UNWINDS CPUSH $out/culprit trace -f c_push -o $out/t.rec --"
	fi
	if [ -n "${BASE:-}" ]; then
		echo "BASE trace|$BASE trace -f f_$f -o $out/t.rec --"
		echo "BASE --no-cpu-time|$BASE trace --no-cpu-time -f f_$f -o $out/t.rec --"
		echo "BASE --cpu-sample 0|$BASE trace --cpu-sample 0 -f f_$f -o $out/t.rec --"
		echo "BASE --cpu-sample 999|$BASE trace --cpu-sample 999 -f f_$f -o $out/t.rec --"
		echo "BASE a later trace|LATER $BASE trace -f f_$f -o $out/t.rec --"
	fi
	if command -v bpftrace >/dev/null; then
		# As bench/trace.sh runs them: a histogram of the durations, and
		# each call's printed. bpftrace -c runs the program.
		echo "bpftrace (histogram)|bpftrace -e @uprobe:$bin:f_$f { @s[tid] = nsecs; } uretprobe:$bin:f_$f /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }@ -c"
		echo "bpftrace (each call)|bpftrace -e @uprobe:$bin:f_$f { @s[tid] = nsecs; } uretprobe:$bin:f_$f /@s[tid]/ { printf(\"%d %d\\n\", tid, nsecs - @s[tid]); delete(@s[tid]); }@ -c"
	fi
	if command -v uftrace >/dev/null; then
		echo "uftrace -P|UFTRACE uftrace record --debug-domain dynamic:3 -d $out/uftrace.data -P f_$f"
	fi
}
# run F PREFIX: one run; prints the program's CPU µs and everything's.
# Each trace starts from no statistics of the build (a fresh
# CULPRIT_TRACE_STATS), as a build's first trace does: its CPU samples
# then run at 99 Hz. A LATER one runs after another trace of the build,
# untimed, as a build's second trace.
run() {
	local f=$1 prefix=$2 bin=$bin
	rm -rf "$out/stats"
	if [[ $prefix == LATER* ]]; then
		prefix=${prefix#LATER }
		local seed=${prefix/ trace / trace --cpu-sample 999 } other=sub
		[ "$f" = sub ] && other=cet
		# shellcheck disable=SC2086
		${seed/-f f_$f /-f f_$other } "$bin" "$f" 100000000 >/dev/null 2>"$out/err.later" || true
		grep -q "kept for choosing the next trace" "$out/err.later" ||
			echo "the untimed trace before ${prefix%% *}'s later trace pooled no sample: the timed one was a first trace" >&2
	fi
	if [[ $prefix == UNWINDS* ]]; then
		bin=$out/probecalls-unwinds prefix=${prefix#UNWINDS }
	fi
	if [[ $prefix == UFTRACE* ]]; then
		bin=$out/probecalls-uftrace prefix=${prefix#UFTRACE }
	fi
	if [[ $prefix == CPUSH* ]]; then
		f=cpush prefix=${prefix#CPUSH }
	fi
	if [[ $prefix == bpftrace* ]]; then
		# The script between @…@ is one argument; -c takes the command.
		local script=${prefix#*@}
		script=${script%@*}
		/usr/bin/time -f "time %U %S" -o "$out/time" bpftrace -e "$script" -c "$bin $f $n" >"$out/prog" 2>"$out/err" || true
	else
		# shellcheck disable=SC2086
		/usr/bin/time -f "time %U %S" -o "$out/time" $prefix "$bin" "$f" "$n" >"$out/prog" 2>"$out/err" || true
	fi
	if [[ $prefix == uftrace* ]]; then
		cp "$out/err" "$out/err.uftrace"
	fi
	p=$(awk '/^cpu_us/ { print $2 }' "$out/prog")
	if [ -z "$p" ]; then
		# A run that did not finish says nothing of the cost: left out
		# of the medians, and said.
		echo "run of ${prefix%% *} gave no figure (its output: $(head -c 200 "$out/prog" | tr '\n' ' '); $(grep -v "^time" "$out/time" | tr '\n' ' ') $(tail -n 2 "$out/err" | tr '\n' ' '))" >&2
		return
	fi
	t=$(awk '/^time/ { printf "%d", ($2 + $3) * 1000000 }' "$out/time")
	echo "$p $t"
}
printf "%-6s %-22s %16s %20s %8s\n" first probe "program µs/call" "tracer's own µs/call" "vs bare"
for f in "${firsts[@]}"; do
	mapfile -t cs < <(configs "$f")
	rm -f "$out"/runs.*
	# The configurations interleaved, a run of each in turn, so that a
	# change in the machine's load falls on all of them alike.
	for _ in $(seq "$reps"); do
		for i in "${!cs[@]}"; do
			run "$f" "${cs[$i]#*|}" >>"$out/runs.$i"
		done
	done
	read -r b _ < <(awk '{print $1}' "$out/runs.0" | median)
	bare=""
	for i in "${!cs[@]}"; do
		[ "$i" -eq 0 ] && continue
		if [[ ${cs[$i]%%|*} == uftrace* ]] && ! uftrace report -d "$out/uftrace.data" 2>/dev/null | grep -q "f_$f\$"; then
			# Its dynamic patching cannot move every first instruction:
			# then it traces nothing, and its time says nothing.
			printf "%-6s %-22s %16s\n" "$f" "${cs[$i]%%|*}" "recorded no call of f_$f: $(grep -m1 -E "(SKIP|FAIL).*f_$f\$" "$out/err.uftrace" | tr -s ' ')"
			continue
		fi
		p=$(awk '{print $1}' "$out/runs.$i" | median)
		t=$(awk '{print $2}' "$out/runs.$i" | median)
		per=$(awk -v p="$p" -v b="$b" -v n="$n" 'BEGIN { printf "%.4f", (p - b) / n }')
		[ "${cs[$i]%%|*}" = "entry+return" ] && bare=$per
		vs=-
		[ -n "$bare" ] && vs=$(awk -v a="$per" -v b="$bare" 'BEGIN { printf "%.2f", a / b }')
		awk -v name="${cs[$i]%%|*}" -v f="$f" -v p="$p" -v t="$t" -v per="$per" -v n="$n" -v vs="$vs" \
			'BEGIN { printf "%-6s %-22s %16.2f %20.2f %8s\n", f, name, per, (t - p) / n, vs }'
	done
done
echo "N=$n calls, median of $reps interleaved runs; $(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
