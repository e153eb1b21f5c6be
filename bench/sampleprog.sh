#!/usr/bin/env bash
# Cost of culprit's BPF sampling program (internal/sampleprog) per sample,
# as the kernel measures it (kernel.bpf_stats_enabled), in four uses:
# expressions reading heap jobs (jobs.c), value sampling of ~700 variables
# (bench/genwide), --jitter alone (every tick runs it; 9 in 10 are dropped),
# and both; and fp mode's stack copy sized per thread on libcalls (-O2,
# without frame pointers), the default record, against no stack copy (the
# program then only filters the followed processes, as with --stack-size:
# perf copies). Also the time to load it (verification), from the Go test.
#
#   bench/sampleprog.sh
#
# Needs root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
go build -o "$out/bpfstats" "$root/bench/bpfstats"
gcc -O2 -g -o "$out/jobs" "$root/testdata/targets/jobs.c"
gcc -O2 -g -fomit-frame-pointer -o "$out/libcalls" "$root/testdata/targets/libcalls.c"
go run "$root/bench/genwide" >"$out/wide.c"
gcc -O2 -g -o "$out/wide" "$out/wide.c"
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
measure() {
	local name=$1
	shift
	"$out/culprit" record -o "$out/p.rec" "$@" 2>/dev/null &
	local pid=$!
	sleep 1.5
	printf "%-28s %s\n" "$name" "$("$out/bpfstats" "$pid")"
	wait
}
measure "expr j->size (heap)" --expr 'jobs@process@j->size' -- "$out/jobs" 600 heap
measure "values (~700 variables)" --values -- "$out/wide" 600
measure "jitter 20%" --jitter 20 -- "$out/jobs" 600 heap
measure "expr + jitter 20%" --jitter 20 --expr 'jobs@process@j->size' -- "$out/jobs" 600 heap
measure "fp stack copy (libcalls)" -- "$out/libcalls" 12000
measure "filter only (--stack-size)" --stack-size 8192 -- "$out/libcalls" 12000
go test -count=1 -run TestLoadTime -v "$root/internal/sampleprog" | grep -E 'load' || true
