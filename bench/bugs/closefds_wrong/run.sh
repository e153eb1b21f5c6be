#!/usr/bin/env bash
# run.sh OUTDIR normal|buggy -- PREFIX...: one run of the workload: the
# same job table under the usual descriptor limit of 1024 (normal) or the
# limit of 20000 a container or service manager may set (buggy).
set -euo pipefail
out=$1 mode=$2
shift 2
[ "${1:-}" = -- ] && shift
case $mode in
normal) ulimit -n 1024 ;;
buggy) ulimit -n 20000 ;;
*) echo "run.sh: mode is normal or buggy, not $mode" >&2; exit 2 ;;
esac
exec "$@" "$out/prog"
