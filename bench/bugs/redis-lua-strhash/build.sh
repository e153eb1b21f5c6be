#!/bin/sh
# build.sh OUTDIR: redis-server and redis-benchmark from Debian's redis
# 7.0.15-1~deb12u7 with the sampled Lua string hash restored.
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$out/redis-server" ] && [ -x "$out/redis-benchmark" ]; then
	exit 0
fi
. "$here/../debsrc.sh"
mkdir -p "$out"
debsrc_fetch redis 5:7.0.15-1~deb12u7 "$out" "$here/regression.patch"
# -O2 -g is the project's default (OPTIMIZATION=-O2, -g -ggdb); libc malloc
# keeps the build to what the case needs.
make -C "$out/src/src" -j"$(nproc)" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no \
	redis-server redis-benchmark >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	exit 1
}
cp "$out/src/src/redis-server" "$out/src/src/redis-benchmark" "$out/"
