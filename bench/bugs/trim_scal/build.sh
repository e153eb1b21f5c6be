#!/usr/bin/env bash
# build.sh OUTDIR: the C++ program, -O2 -g with frame pointers; cached.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ "$out/prog" -nt "$here/prog.cc" ] && exit 0
g++ -std=c++17 -O2 -g -fno-omit-frame-pointer -o "$out/prog" "$here/prog.cc"
