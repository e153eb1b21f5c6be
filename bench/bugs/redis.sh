# redis.sh: the build sourced by the build.sh of the redis cases of the bug corpus.
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
