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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$(( 20000 + RANDOM % 20000 ))
"$@" "$out/redis-server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--pidfile "$tmp/redis.pid" --dir "$tmp" --logfile "$tmp/redis.log" &
prefix_pid=$!
for _ in $(seq 1 300); do
	if [ -s "$tmp/redis.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		break
	fi
	kill -0 "$prefix_pid" 2>/dev/null || { echo "run.sh: redis-server exited early" >&2; cat "$tmp/redis.log" >&2; exit 1; }
	sleep 0.1
done
bench() { "$out/redis-benchmark" -p "$port" -q "$@" >>"$tmp/bench.log" 2>&1; }
status=0
bench -c 4 -n 30000 -r 30000 SET "${prefix}__rand_int__" v &&
	bench -c 1 -n "$evals" EVAL "$script" 0 "${prefix}*" || { status=$?; cat "$tmp/bench.log" >&2; }
kill -TERM "$(cat "$tmp/redis.pid")"
wait "$prefix_pid" || true
exit $status
