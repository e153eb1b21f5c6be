#!/usr/bin/env bash
# culprit's reports side by side with perf's and pprof's on one real run.
#
# bench/reporttarget (two threads, a four-level call tree over its own
# loops, libc and system calls; -O2 with frame pointers) runs SECONDS of CPU
# time per thread twice under `culprit record` and twice under `perf record`,
# both at 49,999 Hz with frame-pointer call chains (culprit's default fp
# mode, perf's -g): about 1M samples per recording at the default of 10 s.
# Then each culprit command and its nearest equivalent run as interleaved
# pairs, RUNS times (the order alternating), so that the load of a shared
# machine falls on both sides alike: wall seconds, CPU seconds (user+sys) and
# peak RSS, medians, and the median of the paired wall ratios.
#
# The timeline exports write to standard output, as perf script does, both
# to /dev/null. The readers without a perf or pprof equivalent run alone,
# RUNS times: latency and contexts on 1M events (a real recording of
# testdata/targets/introperf_caller with every event kind, repeated by
# bench/replicate) and diagnose on 1M value samples (bench/genvalues over a
# real recording of testdata/targets/vprof_wrong).
#
# Finally the recordings are repeated to 10M samples, events and values
# (bench/replicate: the same stacks, shifted in time) to show how each
# reader's memory grows with the recording.
#
#   bench/report.sh [RUNS] [SECONDS]
#
# Needs root (perf record, culprit record), gcc, perf, go and GNU time.
# Writes about 1 GB under bench/out/report. Each phase ends with a comment
# line giving its wall time and the load average, so that a run's length
# and how busy the machine was can be read from its output.
set -euo pipefail
runs=${1:-5}
secs=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/report
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/target" "$root/bench/reporttarget/main.c"
rate=49999
c=$out/culprit
cd "$out"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# culprit $(git -C "$root" rev-parse --short HEAD), $(perf version), $(go version | cut -d' ' -f3)"
# phase NAME: how long the phase that just ended took.
t0=$SECONDS
tp=$SECONDS
phase() {
	echo "# $1: $((SECONDS - tp)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	tp=$SECONDS
}
for r in a b; do
	"$c" record -F $rate -o "$r.rec" -- "$out/target" "$secs" 2 2>"$out/rec.txt" >/dev/null
	perf record -q -F $rate -g -o "$r.data" -- "$out/target" "$secs" 2 2>/dev/null >/dev/null
	declare "n_$r=$(grep -o '[0-9]* samples' "$out/rec.txt" | head -1 | cut -d' ' -f1)"
	echo "# run $r: culprit $(eval echo \$n_$r) samples ($(stat -c %s "$r.rec") bytes)," \
		"perf $(perf report -i "$r.data" --stdio -g none --sort pid 2>/dev/null | grep -o '^# Samples: [0-9.]*[KM]*' | cut -d' ' -f3) samples ($(stat -c %s "$r.data") bytes)"
done
"$c" export --format pprof -o a.pb.gz a.rec 2>/dev/null
phase "recording"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# measure CMD...: one run; prints "wall cpu rssKiB".
measure() {
	/usr/bin/time -o "$out/t.txt" -f "%e %U %S %M" "$@" >/dev/null 2>&1 || true
	tail -1 "$out/t.txt" | awk '{printf "%s %.2f %s\n", $1, $2+$3, $4}'
}

# pair NAME "CULPRIT ARGS" "REFERENCE COMMAND": RUNS interleaved runs.
pair() {
	local name=$1 cmd=$2 ref=$3 a b
	: >"$out/pair.txt"
	for ((i = 0; i < runs; i++)); do
		if ((i % 2 == 0)); then
			a=$(measure $c $cmd)
			b=$(measure $ref)
		else
			b=$(measure $ref)
			a=$(measure $c $cmd)
		fi
		echo "$a $b" >>"$out/pair.txt"
	done
	local cw ccpu crss rw rcpu rrss ratio lo hi
	cw=$(awk '{print $1}' "$out/pair.txt" | median)
	ccpu=$(awk '{print $2}' "$out/pair.txt" | median)
	crss=$(awk '{print $3}' "$out/pair.txt" | median)
	rw=$(awk '{print $4}' "$out/pair.txt" | median)
	rcpu=$(awk '{print $5}' "$out/pair.txt" | median)
	rrss=$(awk '{print $6}' "$out/pair.txt" | median)
	ratio=$(awk '{print $1/$4}' "$out/pair.txt" | median)
	lo=$(awk '{print $1/$4}' "$out/pair.txt" | sort -g | head -1)
	hi=$(awk '{print $1/$4}' "$out/pair.txt" | sort -g | tail -1)
	printf "| %s | %.2f | %.2f | %d | %s | %.2f | %.2f | %d | %.2f (%.2f–%.2f) | %.2f |\n" \
		"culprit $name" "$cw" "$ccpu" $((crss / 1024)) "$ref_name" "$rw" "$rcpu" $((rrss / 1024)) "$ratio" "$lo" "$hi" \
		"$(echo "$crss $rrss" | awk '{print $1/$2}')"
}

# single NAME "CULPRIT ARGS": RUNS runs of a command without an equivalent.
single() {
	local name=$1 cmd=$2
	: >"$out/pair.txt"
	for ((i = 0; i < runs; i++)); do
		measure $c $cmd >>"$out/pair.txt"
	done
	printf "| %s | %.2f | %.2f | %d | – | | | | | |\n" "culprit $name" \
		"$(awk '{print $1}' "$out/pair.txt" | median)" "$(awk '{print $2}' "$out/pair.txt" | median)" \
		$(($(awk '{print $3}' "$out/pair.txt" | median) / 1024))
}

echo
echo "| command | wall s | CPU s | peak RSS MiB | reference | wall s | CPU s | peak RSS MiB | wall ratio, median of pairs (min–max) | RSS ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|"
flat="perf report -i a.data --stdio --no-children -g none"
ref_name="perf report --stdio --no-children -g none"
pair "report" "report a.rec" "$flat"
pair "report --by line" "report --by line a.rec" "$flat"
pair "report --callers 5" "report --callers 5 a.rec" "$flat"
pair "report --tree" "report --tree a.rec" "$flat"
ref_name="perf report --stdio --children (call graph)"
pair "report --tree" "report --tree a.rec" "perf report -i a.data --stdio --children"
ref_name="perf diff"
pair "diff" "diff a.rec b.rec" "perf diff a.data b.data"
ref_name="go tool pprof -top (exported file)"
pair "report" "report a.rec" "go tool pprof -top a.pb.gz"
for f in pprof folded svg; do
	single "export --format $f" "export --format $f -o x.$f a.rec"
done
# The timelines (every sample in time order) against perf's dump of every
# sample.
ref_name="perf script"
pair "export --format speedscope" "export --format speedscope -o - a.rec" "perf script -i a.data"
pair "export --format chrome" "export --format chrome -o - a.rec" "perf script -i a.data"
phase "pairs"

# Readers without an equivalent, on 1M events or value samples.
cflags=(-O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls)
gcc "${cflags[@]}" -o "$out/caller" "$root/testdata/targets/introperf_caller.c"
gcc -O2 -g -pthread -o "$out/vprof_wrong" "$root/testdata/targets/vprof_wrong.c"
(cd "$root" && go build -o "$out/replicate" ./bench/replicate && go build -o "$out/genvalues" ./bench/genvalues)
"$c" record --events cpu,syscalls,sched -o seed.rec -- "$out/caller" 1000 >/dev/null 2>&1
"$c" record --events cpu,syscalls,sched -o seed-base.rec -- "$out/caller" 256 >/dev/null 2>&1
"$c" record -o vseed.rec -- "$out/vprof_wrong" buggy >/dev/null 2>&1
"$out/replicate" -n 1000000 seed.rec ip.rec
"$out/genvalues" -values 1000000 vseed.rec vn.rec vb.rec >/dev/null
phase "IntroPerf and value recordings"
echo
echo "# 1M events ($(stat -c %s ip.rec) bytes) and 1M value samples (2 × $(stat -c %s vn.rec) bytes)"
echo "| command | wall s | CPU s | peak RSS MiB |"
echo "|---|---|---|---|"
for args in "latency ip.rec" "latency --format chrome -o - ip.rec" "contexts --base seed-base.rec --buggy ip.rec" \
	"diagnose --normal vn.rec --buggy vb.rec"; do
	: >"$out/pair.txt"
	for ((i = 0; i < runs; i++)); do
		measure $c $args >>"$out/pair.txt"
	done
	printf "| culprit %s | %.2f | %.2f | %d |\n" "$args" \
		"$(awk '{print $1}' "$out/pair.txt" | median)" "$(awk '{print $2}' "$out/pair.txt" | median)" \
		$(($(awk '{print $3}' "$out/pair.txt" | median) / 1024))
done
phase "1M events and values"

echo
"$out/replicate" -n 10000000 a.rec big.rec
"$out/replicate" -n 10000000 seed.rec ipbig.rec
"$out/genvalues" -values 10000000 vseed.rec vbign.rec vbigb.rec >/dev/null
phase "10M recordings"
echo "# 10M samples ($(stat -c %s big.rec) bytes): the first recording repeated; 10M events, 10M values likewise"
echo "| command | records | wall s | CPU s | peak RSS MiB |"
echo "|---|---|---|---|---|"
# row ARGS RECORDS: one run.
row() {
	local m
	m=$(measure $c $1)
	set -- $m "$2" "$1"
	printf "| culprit %s | %s | %s | %s | %d |\n" "$5" "$4" "$1" "$2" $(($3 / 1024))
}
for args in "report" "report --callers 5" "report --tree" "diff a.rec" "export --format speedscope -o -" "export --format chrome -o -"; do
	row "$args a.rec" "$n_a"
	row "$args big.rec" 10000000
done
for args in "latency" "latency --format chrome -o -" "latency --format json -o -" "contexts --base seed-base.rec --buggy"; do
	row "$args ip.rec" 1000000
	row "$args ipbig.rec" 10000000
done
row "diagnose --normal vn.rec --buggy vb.rec" 1000000
row "diagnose --normal vbign.rec --buggy vbigb.rec" 10000000
rm -f big.rec ipbig.rec vbign.rec vbigb.rec
phase "1M and 10M rows"
echo "# total: $((SECONDS - t0)) s"
