#!/usr/bin/env bash
# What one cpu-clock sample costs the sampled thread, by what it carries (the
# kernel's work in the target's context, without any recorder): see
# bench/samplecost/samplecost.c. Needs root (or perf_event_paranoid ≤ 2) and gcc.
#
#   bench/samplecost.sh [REPS] [CPU]
set -euo pipefail
reps=${1:-15}
cpu=${2:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
mkdir -p "$out"
gcc -O2 -fno-omit-frame-pointer -o "$out/samplecost" "$root/bench/samplecost/samplecost.c"
"$out/samplecost" 300000000 "$reps" "$cpu"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
