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
bench -c 1 -n 1000 -r 1000 SET key:__rand_int__ value &&
	bench -c 1 -n 1 SET aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1 &&
	bench -c 2 -n "$requests" KEYS "$pattern" || { status=$?; cat "$tmp/bench.log" >&2; }
kill -TERM "$(cat "$tmp/redis.pid")"
wait "$prefix_pid" || true
exit $status
