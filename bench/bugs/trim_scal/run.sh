#!/usr/bin/env bash
# run.sh OUTDIR normal|buggy -- PREFIX...: one run of the workload.
set -euo pipefail
out=$1 mode=$2
shift 2
[ "${1:-}" = -- ] && shift
exec "$@" "$out/prog" "$mode"
