#!/usr/bin/env bash
# build.sh OUTDIR: libgc.so and the program linked to it, -O2 -g with
# frame pointers; cached.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.c" ] && [ "$out/libgc.so" -nt "$here/gc.c" ] && [ "$out/prog" -nt "$here/gc.h" ] && exit 0
gcc -O2 -g -fno-omit-frame-pointer -fPIC -shared -o "$out/libgc.so" "$here/gc.c"
gcc -O2 -g -fno-omit-frame-pointer -pthread -I"$here" -o "$out/prog" "$here/prog.c" -L"$out" -lgc -Wl,-rpath,'$ORIGIN'
