# redis.sh: sourced by the build.sh and run.sh of the redis cases of the bug corpus.
#
# redis_build OUTDIR PATCH builds redis-server and redis-benchmark from Debian's
# redis 7.0.15-1~deb12u7 with PATCH (the case's regression) applied, into
# OUTDIR; returns at once when OUTDIR already holds both.

redis_build() {
	out=$1
	if [ -x "$out/redis-server" ] && [ -x "$out/redis-benchmark" ]; then
		return 0
	fi
	. "$(dirname "$2")/../debsrc.sh"
	mkdir -p "$out"
	debsrc_fetch redis 5:7.0.15-1~deb12u7 "$out" "$2"
	# -O2 -g is the project's default (OPTIMIZATION=-O2, -g -ggdb); libc malloc
	# keeps the build to what the case needs.
	make -C "$out/src/src" -j"$(nproc)" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no \
		redis-server redis-benchmark >"$out/build.log" 2>&1 || {
		tail -n 30 "$out/build.log" >&2
		return 1
	}
	cp "$out/src/src/redis-server" "$out/src/src/redis-benchmark" "$out/"
}

# redis_run OUTDIR DRIVE PREFIX...: runs PREFIX... OUTDIR/redis-server on a
# loopback port (no persistence), waits until it accepts connections, calls
# DRIVE (a function of the case's run.sh, which sends the load with
# redis_bench), then stops the server with SIGTERM. It returns DRIVE's status
# when that failed (with the benchmark's output on stderr), else PREFIX's.
# bash: it uses /dev/tcp. The port: bugs_port (port.sh).
redis_run() {
	out=$1 drive=$2
	shift 2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	. "$(dirname "${BASH_SOURCE[0]}")/port.sh"
	port=$(bugs_port "$out") || return 1
	"$@" "$out/redis-server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--pidfile "$tmp/redis.pid" --dir "$tmp" --logfile "$tmp/redis.log" &
	prefix_pid=$!
	# Under a recorder that makes the server's schema first, on a busy
	# machine, the server can take minutes to listen; a benchmark started
	# before it does never finishes (redis-benchmark spins after a refused
	# first connection), so wait for it, up to 15 minutes.
	ready=0
	for _ in $(seq 1 9000); do
		if [ -s "$tmp/redis.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			ready=1
			break
		fi
		kill -0 "$prefix_pid" 2>/dev/null || {
			echo "run.sh: redis-server exited early" >&2
			cat "$tmp/redis.log" >&2
			return 1
		}
		sleep 0.1
	done
	if [ $ready = 0 ]; then
		echo "run.sh: redis-server did not accept connections on port $port within 15 minutes" >&2
		kill -TERM "$prefix_pid" 2>/dev/null || true
		wait "$prefix_pid" || true
		return 1
	fi
	status=0
	"$drive" || status=$?
	kill -TERM "$(cat "$tmp/redis.pid")" 2>/dev/null || true
	if [ $status -ne 0 ]; then
		cat "$tmp/bench.log" >&2
		wait "$prefix_pid" || true
		return $status
	fi
	wait "$prefix_pid"
}

# redis_bench ARGS...: redis-benchmark -q ARGS... against the server of
# redis_run, its output added to the run's bench.log.
redis_bench() {
	"$out/redis-benchmark" -p "$port" -q "$@" >>"$tmp/bench.log" 2>&1
}
