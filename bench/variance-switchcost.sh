#!/usr/bin/env bash
# What culprit variance --sched costs a program per context switch.
#
# bench/variance/switchpair.c: two threads on CPU 0 hand a byte back and
# forth through pipes, each round two switches of threads blocking in
# read(2) and two wake-ups each made by the other (traced) thread. It runs
# under culprit variance --start main --rounds 1 --trap-budget 0 (plain)
# and the same with --sched, culprit on CPU 1, in turn within each run,
# and prints its own CPU time per round (getrusage). With the program on a
# CPU of its own placement does not move it, and the figure moved by about
# ±5% between runs at load 10-18 where a memcached's CPU per get moved by
# ±15%. The report is each configuration's CPU per round and, per run,
# what --sched added to plain's. plain's own figure includes the probes on
# main's callee handle(), called once a round.
#
# -f runs switchpair's threads SCHED_FIFO (priority 10): on a machine other
# jobs load, their threads then do not share its CPU (the figures above
# moved by a factor of two between runs at load 25 without it).
#
#   bench/variance-switchcost.sh [-r RUNS] [-n ROUNDS] [-f] [CULPRIT...]
#
# Each CULPRIT (default: built from this tree) is a --sched configuration
# of its own, to compare builds; plain runs the first. Needs root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=3
rounds=100000
fifo=
while getopts "r:n:f" opt; do
	case $opt in
	r) runs=$OPTARG ;;
	n) rounds=$OPTARG ;;
	f) fifo=10 ;;
	*) echo "usage: bench/variance-switchcost.sh [-r RUNS] [-n ROUNDS] [-f] [CULPRIT...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
tmp=$(mktemp -d /tmp/culprit-swcost-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -pthread -o "$tmp/switchpair" "$root/bench/variance/switchpair.c"
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	(cd "$root" && go build -o "$tmp/culprit" ./cmd/culprit)
	bins=("$tmp/culprit")
fi
# one CULPRIT [FLAG]: prints switchpair's CPU ns per round. (culprit exits
# non-zero: one interval of main is too few for a variance.)
one() {
	SWITCHPAIR_CPU=0 SWITCHPAIR_FIFO=$fifo taskset -c 1 "$1" variance ${2:+"$2"} --start main --rounds 1 --trap-budget 0 -o "$tmp/v.rec" -- "$tmp/switchpair" "$rounds" >"$tmp/out" 2>&1 || true
	awk '/^switchpair / { print $5 }' "$tmp/out"
}
echo "switchpair $rounds rounds on CPU 0${fifo:+ (SCHED_FIFO $fifo)}, culprit on CPU 1; $runs runs; $(date -u +%FT%TZ)"
for ((r = 1; r <= runs; r++)); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	p=$(one "${bins[0]}")
	line="run $r (load $load): plain $p ns/round"
	for i in "${!bins[@]}"; do
		s=$(one "${bins[$i]}" --sched)
		line+="; --sched (${bins[$i]}) $s, +$((s - p)) ns/round"
	done
	echo "$line"
done
