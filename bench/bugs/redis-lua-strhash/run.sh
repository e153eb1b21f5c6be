#!/bin/bash
# run.sh OUTDIR MODE -- PREFIX...: a Lua script lists keys with KEYS and
# counts them, against a redis-server holding about 19,000 keys.
#   normal: keys "u:<12 digits>" (14 bytes), EVAL 150 times
#   buggy:  keys "<a 52-byte common prefix><12 digits>" (64 bytes), EVAL 60 times
# The server runs as PREFIX... redis-server on a loopback port; redis-benchmark
# loads the keys (SET key:__rand_int__, 30,000 requests over 30,000 numbers)
# and sends the EVALs; the server is stopped with SIGTERM.
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) prefix='u:' evals=150 ;;
buggy) prefix='tenant:0042:user:session:cache:entries:v2:shard:007:' evals=60 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
script='local keys = redis.call("KEYS", ARGV[1]) return #keys'
. "$(dirname "$0")/../redis.sh"
drive() {
	redis_bench -c 4 -n 30000 -r 30000 SET "${prefix}__rand_int__" v &&
		redis_bench -c 1 -n "$evals" EVAL "$script" 0 "${prefix}*"
}
redis_run "$out" drive "$@"
