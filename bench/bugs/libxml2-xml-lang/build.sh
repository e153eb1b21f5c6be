#!/bin/sh
# build.sh OUTDIR: xmllint from Debian's libxml2 2.9.14+dfsg-1.3~deb12u4 (or ~deb12u6) with
# the quadratic xml:* attribute lookup restored, libxml2 linked in statically
# so the tree functions are in the one binary.
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../libxml2.sh"
libxml2_build "$1" "$here/regression.patch"
