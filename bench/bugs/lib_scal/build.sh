#!/usr/bin/env bash
# build.sh OUTDIR: libhist.so and the program linked to it, -O2 -g with
# frame pointers; cached.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.c" ] && [ "$out/libhist.so" -nt "$here/hist.c" ] && exit 0
gcc -O2 -g -fno-omit-frame-pointer -fPIC -shared -o "$out/libhist.so" "$here/hist.c"
gcc -O2 -g -fno-omit-frame-pointer -pthread -I"$here" -o "$out/prog" "$here/prog.c" -L"$out" -lhist -Wl,-rpath,'$ORIGIN'
