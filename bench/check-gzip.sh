#!/bin/sh
# check-gzip.sh WORKDIR [CULPRIT]: culprit diagnose on Debian's gzip.
#
# Builds gzip from Debian bookworm's source (gzip 1.12-1, -O2 -g with frame
# pointers) in WORKDIR, makes two inputs (normal: 6 MB of text, this
# repository's docs and the system's licences repeated; slow: 500,000
# random letters a and b, whose hash chains are long and whose matches are
# short, about 80x the CPU time per byte at -9), records gzip -9 on each
# with culprit record --values and runs culprit diagnose on the pair. The
# slow input is no bug with a known fix, so no rank is checked (the top
# three are printed); the check is of what a user reads in the answer:
#
#   - no input that differs is an identity (the input file's inode,
#     istat.st_ino, differs between any two runs; docs/vprof.md);
#   - each function whose evidence is a global lists only its own lines
#     (a global read in several functions: docs/vprof.md, "Localisation").
#
# Prints the check's lines and PASS or FAIL (exit 1). Needs root, gcc, jq,
# and apt-get source (a deb-src entry is added when missing).
set -eu
[ $# -ge 1 ] || { echo "usage: check-gzip.sh WORKDIR [CULPRIT]" >&2; exit 2; }
work=$1
culprit=${2:-culprit}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bugs/debsrc.sh"
mkdir -p "$work"
work=$(cd "$work" && pwd)

if [ ! -f "$work/src/.fetched" ]; then
	debsrc_ensure_src gzip
	rm -rf "$work/dl" "$work/src"
	mkdir -p "$work/dl"
	(cd "$work/dl" && apt-get source -qq gzip=1.12-1 >apt-source.log 2>&1) || {
		cat "$work/dl/apt-source.log" >&2
		exit 1
	}
	mv "$(find "$work/dl" -mindepth 1 -maxdepth 1 -type d | head -n 1)" "$work/src"
	rm -rf "$work/dl"
	# Debian's patches leave the autotools outputs older than their
	# inputs; keep make from regenerating them.
	(cd "$work/src" && touch aclocal.m4 && sleep 1 &&
		touch configure Makefile.in lib/Makefile.in doc/Makefile.in tests/Makefile.in lib/config.hin)
	touch "$work/src/.fetched"
fi
cd "$work/src"
[ -f Makefile ] || ./configure CFLAGS="-O2 -g -fno-omit-frame-pointer" >"$work/configure.log" 2>&1
{ make version.h && make -j"$(nproc)" -C lib && make -j"$(nproc)" gzip; } >"$work/make.log" 2>&1 ||
	{ tail -20 "$work/make.log" >&2; echo "check-gzip: the build failed, see $work/make.log" >&2; exit 1; }
cd "$work"
if [ ! -f text.in ]; then
	for i in 1 2 3 4 5 6 7 8; do cat "$here"/../docs/*.md /usr/share/common-licenses/*; done | head -c 6000000 >text.in
	head -c 500000 /dev/urandom | od -An -v -tu1 | tr -s ' ' '\n' | awk 'NF { printf "%s", ($1 % 2) ? "a" : "b" }' >slow.in
fi
"$culprit" record --values -o normal.rec -- "$work/src/gzip" -9 -c text.in >/dev/null 2>record.log
"$culprit" record --values -o buggy.rec -- "$work/src/gzip" -9 -c slow.in >/dev/null 2>>record.log
"$culprit" diagnose --normal normal.rec --buggy buggy.rec --format json >diagnose.json
"$culprit" diagnose --normal normal.rec --buggy buggy.rec --top 5 >diagnose.txt

fail=0
echo "top 3: $(jq -r '[.functions[0:3][] | "\(.name) (\(.evidence), \(.pattern))"] | join(", ")' diagnose.json)"
idents=$(jq -r '.inputs[]? | select(.name | test("st_ino$|st_dev$|st_uid$|st_gid$")) | .name' diagnose.json)
echo "inputs that differ: $(jq -r '[.inputs[]?.name] | join(", ")' diagnose.json)"
[ -z "$idents" ] || { echo "FAIL: identities listed as inputs that differ: $idents"; fail=1; }
foreign=$(jq -r '.functions[] | select(.variable_info.global == true) | .name as $f |
	.lines[] | select(.function != $f) | "\($f): \(.file):\(.line) in \(.function)"' diagnose.json)
echo "functions with a global's lines: $(jq -r '[.functions[] | select(.variable_info.global == true and (.lines | length) > 0) | .name] | join(", ")' diagnose.json)"
[ -z "$foreign" ] || { echo "FAIL: lines of other functions:"; echo "$foreign"; fail=1; }
if [ $fail = 0 ]; then
	echo PASS
else
	echo FAIL
	exit 1
fi
