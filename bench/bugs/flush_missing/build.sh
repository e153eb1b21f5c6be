#!/usr/bin/env bash
# build.sh OUTDIR: libbp.so and the program linked to it, -O2 -g with
# frame pointers; cached.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.c" ] && [ "$out/libbp.so" -nt "$here/bp.c" ] && [ "$out/prog" -nt "$here/bp.h" ] && [ "$out/libbp.so" -nt "$here/bp.h" ] && exit 0
gcc -O2 -g -fno-omit-frame-pointer -fPIC -shared -o "$out/libbp.so" "$here/bp.c"
gcc -O2 -g -fno-omit-frame-pointer -pthread -I"$here" -o "$out/prog" "$here/prog.c" -L"$out" -lbp -Wl,-rpath,'$ORIGIN'
