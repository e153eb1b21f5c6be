#!/bin/sh
# check-xz.sh WORKDIR [CULPRIT]: culprit diagnose's inputs that differ, on
# Debian's xz.
#
# Builds xz from Debian bookworm's source (xz-utils 5.4.1-1+deb12u1, -O2
# -g, liblzma linked in statically) in WORKDIR, makes 300 kB of text (this
# repository's docs and the system's licences), records `xz -c -1` and
# `xz -c -9e` on it with culprit record --values, and runs culprit
# diagnose on the pair. The slower preset is no bug with a known fix, so
# no rank is checked; the check is of what a user reads as the inputs
# that differ (docs/vprof.md, "Run-constant values are inputs" and "Clock
# readings are not inputs"):
#
#   - no input that differs is a clock reading: next_flush and start_time
#     hold clock_gettime(CLOCK_MONOTONIC) in ms, and differ between any
#     two runs;
#   - the preset is one (preset_number, set after the first samples of
#     the run, once the command line is parsed).
#
# Prints the check's lines and PASS or FAIL (exit 1). Needs root, gcc, jq,
# and apt-get source (a deb-src entry is added when missing).
set -eu
[ $# -ge 1 ] || { echo "usage: check-xz.sh WORKDIR [CULPRIT]" >&2; exit 2; }
work=$1
culprit=${2:-culprit}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bugs/debsrc.sh"
mkdir -p "$work"
work=$(cd "$work" && pwd)

if [ ! -f "$work/src/.fetched" ]; then
	debsrc_ensure_src xz-utils
	rm -rf "$work/dl" "$work/src"
	mkdir -p "$work/dl"
	(cd "$work/dl" && apt-get source -qq xz-utils=5.4.1-1+deb12u1 >apt-source.log 2>&1) || {
		cat "$work/dl/apt-source.log" >&2
		exit 1
	}
	mv "$(find "$work/dl" -mindepth 1 -maxdepth 1 -type d | head -n 1)" "$work/src"
	rm -rf "$work/dl"
	touch "$work/src/.fetched"
fi
cd "$work/src"
[ -f Makefile ] || ./configure CFLAGS="-O2 -g" --disable-shared >"$work/configure.log" 2>&1
make -j"$(nproc)" >"$work/make.log" 2>&1 ||
	{ tail -20 "$work/make.log" >&2; echo "check-xz: the build failed, see $work/make.log" >&2; exit 1; }
cd "$work"
[ -f text.in ] || for i in 1 2 3 4 5 6 7 8; do cat "$here"/../docs/*.md /usr/share/common-licenses/*; done | head -c 300000 >text.in
"$culprit" record --values -o normal.rec -- "$work/src/src/xz/xz" -c -1 text.in >/dev/null 2>record.log
"$culprit" record --values -o buggy.rec -- "$work/src/src/xz/xz" -c -9e text.in >/dev/null 2>>record.log
"$culprit" diagnose --normal normal.rec --buggy buggy.rec --format json >diagnose.json
"$culprit" diagnose --normal normal.rec --buggy buggy.rec --top 5 >diagnose.txt

fail=0
echo "top 3: $(jq -r '[.functions[0:3][] | "\(.name) (\(.evidence), \(.pattern))"] | join(", ")' diagnose.json)"
echo "inputs that differ: $(jq -r '[.inputs[]? | "\(.name) \(.normal) → \(.buggy)"] | join(", ")' diagnose.json)"
clocks=$(jq -r '.inputs[]? | select(.name == "next_flush" or .name == "start_time") | .name' diagnose.json)
[ -z "$clocks" ] || { echo "FAIL: clock readings listed as inputs that differ: $clocks"; fail=1; }
jq -e '[.inputs[]?.name] | index("preset_number")' diagnose.json >/dev/null ||
	{ echo "FAIL: the preset (preset_number) is not an input that differs"; fail=1; }
if [ $fail = 0 ]; then
	echo PASS
else
	echo FAIL
	exit 1
fi
