#!/bin/sh
# build.sh OUTDIR: memcached from Debian's memcached 1.6.18-1+deb12u1 (or 1.6.18-1) with the
# ASCII-auth busy loop restored, and the case's load generator.
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$out/memcached" ] && [ -x "$out/mcload" ]; then
	exit 0
fi
. "$here/../debsrc.sh"
if ! dpkg -s libevent-dev >/dev/null 2>&1; then
	apt-get install -y -qq libevent-dev >/dev/null
fi
mkdir -p "$out"
debsrc_fetch memcached "1.6.18-1+deb12u1|1.6.18-1" "$out" "$here/regression.patch"
(
	cd "$out/src"
	# -O2 -g are the project's default CFLAGS.
	./configure --disable-sasl --disable-extstore --disable-coverage
	make -j"$(nproc)" memcached
) >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	exit 1
}
cp "$out/src/memcached" "$out/memcached"
cc -O2 -g -Wall -pthread -o "$out/mcload" "$here/mcload.c"
