#!/usr/bin/env bash
# cprog.sh CASEDIR OUTDIR: builds a case that is one C file, CASEDIR/prog.c,
# into OUTDIR/prog, -O2 -g with frame pointers; cached. bench/bugs.sh runs
# it for a case without a build.sh of its own.
set -euo pipefail
here=$1 out=$2
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.c" ] && exit 0
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/prog" "$here/prog.c"
