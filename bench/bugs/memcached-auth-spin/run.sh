#!/bin/bash
# run.sh OUTDIR MODE -- PREFIX...: memcached with ASCII authentication (-Y)
# serves two client threads, each opening 6 sessions in turn that
# authenticate and then send 3,000 set/get pairs (mcload).
#   normal: only those sessions
#   buggy:  each client thread first opens one more session that sends the
#           first byte of its authentication, then the rest 400 ms later (a
#           client on a slow link), and leaves it open if unanswered
# The server is stopped with SIGTERM.
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) delay=0 ;;
buggy) delay=400 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'bench:secret\n' >"$tmp/auth"
. "$(dirname "$0")/../port.sh"
port=$(bugs_port "$out")
"$@" "$out/memcached" -U 0 -p "$port" -l 127.0.0.1 -t 2 -m 64 -Y "$tmp/auth" \
	-P "$tmp/memcached.pid" -u root &
prefix_pid=$!
# Under a recorder that makes the server's schema first, on a busy machine,
# the server can take minutes to listen: wait for it, up to 15 minutes.
ready=0
for _ in $(seq 1 9000); do
	if [ -s "$tmp/memcached.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		ready=1
		break
	fi
	kill -0 "$prefix_pid" 2>/dev/null || { echo "run.sh: memcached exited early" >&2; exit 1; }
	sleep 0.1
done
if [ $ready = 0 ]; then
	echo "run.sh: memcached did not accept connections on port $port within 15 minutes" >&2
	kill -TERM "$prefix_pid" 2>/dev/null || true
	wait "$prefix_pid" || true
	exit 1
fi
status=0
timeout 120 "$out/mcload" -p "$port" -u bench -k secret -t 2 -s 6 -n 3000 -d "$delay" || status=$?
server=$(cat "$tmp/memcached.pid")
kill -TERM "$server"
for _ in $(seq 1 100); do
	kill -0 "$server" 2>/dev/null || break
	sleep 0.1
done
kill -KILL "$server" 2>/dev/null || true
wait "$prefix_pid" || true
exit $status
