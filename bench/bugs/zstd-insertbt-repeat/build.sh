#!/bin/sh
# build.sh OUTDIR: the zstd command from Debian's libzstd 1.5.4+dfsg2-5 (or
# 1.5.4+dfsg2-5+deb12u1) with the 192-position cap of ZSTD_insertBt1
# restored, the library compiled into the one binary (-O2 -g with frame
# pointers; no zlib, lzma or lz4 formats, no legacy formats).
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$out/zstd" ] && exit 0
. "$here/../debsrc.sh"
mkdir -p "$out"
debsrc_fetch libzstd "1.5.4+dfsg2-5|1.5.4+dfsg2-5+deb12u1" "$out" "$here/regression.patch"
(
	cd "$out/src/programs"
	# CFLAGS from the environment replaces the Makefile's default -O3; its
	# warning flags are still appended.
	CFLAGS="-O2 -g -fno-omit-frame-pointer" make -j"$(nproc)" zstd \
		HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 ZSTD_LEGACY_SUPPORT=0
) >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	exit 1
}
cp "$out/src/programs/zstd" "$out/zstd"
