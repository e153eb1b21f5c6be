#!/usr/bin/env bash
# run.sh OUTDIR normal|buggy -- PREFIX...: one run of the workload: a
# search for "timeout", case-sensitive (normal) or with -i (buggy).
set -euo pipefail
out=$1 mode=$2
shift 2
[ "${1:-}" = -- ] && shift
case $mode in
normal) exec "$@" "$out/prog" timeout ;;
buggy) exec "$@" "$out/prog" -i timeout ;;
*) echo "run.sh: mode is normal or buggy, not $mode" >&2; exit 2 ;;
esac
