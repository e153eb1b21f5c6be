#!/usr/bin/env bash
# build.sh OUTDIR: the program, -O2 -g with frame pointers; cached.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.c" ] && exit 0
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/prog" "$here/prog.c"
