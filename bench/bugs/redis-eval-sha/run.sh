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
"$out/redis-benchmark" -p "$port" -c 4 -n "$requests" -q EVAL "$script" 0 >"$tmp/bench.log" 2>&1 || {
	cat "$tmp/bench.log" >&2
	kill -TERM "$(cat "$tmp/redis.pid")" 2>/dev/null || true
	wait "$prefix_pid" || true
	exit 1
}
kill -TERM "$(cat "$tmp/redis.pid")"
wait "$prefix_pid"
