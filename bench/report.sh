#!/usr/bin/env bash
# Time and peak memory of culprit report over a recording of N samples
# (default 1M): a real recording of a syscall-heavy target (kernel + user
# stacks) is replicated with
# its real stacks to N samples (bench/replicate), then reported on.
#
#   bench/report.sh [N]
set -euo pipefail
n=${1:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
gcc -O2 -g -o "$out/syscalls" "$root/testdata/targets/syscalls.c"
"$out/culprit" record -F 4999 --call-graph dwarf -o "$out/seed.rec" -- "$out/syscalls" 1000000 2>/dev/null
go run "$root/bench/replicate" -n "$n" "$out/seed.rec" "$out/big.rec"
printf "recording: %s samples, %s bytes\n" "$n" "$(stat -c %s "$out/big.rec")"
for args in "report" "report --callers 5" "report --by line" "report --list . --top 0" "report --peek . --top 0" \
	"report --focus write --hide ^do_syscall_64$" "export --format pprof -o $out/big.pb.gz" "export --format svg -o $out/big.svg"; do
	for i in 1 2 3; do
		/usr/bin/time -f "%e s %M KiB" "$out/culprit" $args "$out/big.rec" >/dev/null 2>"$out/time.txt" || true
		echo "culprit $args: $(tail -1 "$out/time.txt")"
	done
done
