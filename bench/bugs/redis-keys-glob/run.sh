#!/bin/bash
# run.sh OUTDIR MODE -- PREFIX...: KEYS with a glob pattern against a
# redis-server holding about 630 keys "key:N" and one key of 30 'a's.
#   normal: KEYS "key:1*" (an ordinary prefix pattern), 60,000 times
#   buggy:  KEYS "a*a*a*a*a*a*b" (stars that cannot match), 700 times
# The server runs as PREFIX... redis-server on a loopback port; redis-benchmark
# loads the keys and sends the KEYS commands; the server is stopped with SIGTERM.
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) pattern='key:1*' requests=60000 ;;
buggy) pattern='a*a*a*a*a*a*b' requests=700 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
. "$(dirname "$0")/../redis.sh"
drive() {
	redis_bench -c 1 -n 1000 -r 1000 SET key:__rand_int__ value &&
		redis_bench -c 1 -n 1 SET aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1 &&
		redis_bench -c 2 -n "$requests" KEYS "$pattern"
}
redis_run "$out" drive "$@"
