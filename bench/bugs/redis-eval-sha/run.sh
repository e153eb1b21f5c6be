#!/bin/bash
# run.sh OUTDIR MODE -- PREFIX...: one EVAL load against redis-server.
#   normal: EVAL of a short script (the script's SHA1 costs nothing)
#   buggy:  EVAL of a 16 KiB script (the SHA1 is computed twice per call)
# The server runs as PREFIX... redis-server on a loopback port; redis-benchmark
# sends a fixed number of requests; the server is stopped with SIGTERM.
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) script='return 1' requests=60000 ;;
buggy)
	# A long comment block, as real scripts carry; Lua compiles it once.
	script="$(printf -- '-- %0120d\n' $(seq 1 128))
return 1"
	requests=20000 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
. "$(dirname "$0")/../redis.sh"
drive() { redis_bench -c 4 -n "$requests" EVAL "$script" 0; }
redis_run "$out" drive "$@"
