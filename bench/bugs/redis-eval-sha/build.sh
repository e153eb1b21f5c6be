#!/bin/sh
# build.sh OUTDIR: redis-server and redis-benchmark from Debian's redis
# 7.0.15-1~deb12u7 with the EVAL script-name regression restored.
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../redis.sh"
redis_build "$1" "$here/regression.patch"
