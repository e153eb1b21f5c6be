#!/usr/bin/env bash
# The bug corpus: how each method ranks each case's root cause.
#
# For every case in bench/bugs/<case>/ (the format: docs/accuracy.md) it
# builds the program, records one normal and one buggy run with perf
# (perf record -g), one of each with culprit record --values (for report and
# diagnose) and one of each with culprit record --events cpu,syscalls,sched
# (for contexts; recorded apart because tracing every system call and
# context switch costs kernel CPU time that would distort the CPU profiles
# of servers), and prints one row per case:
#
#   perf      rank of the root cause by self time in the buggy run (perf report --no-children)
#   report    the same by culprit report (self time)
#   diagnose  rank and pattern by culprit diagnose (default method); * marks the right pattern
#   vprof     rank and pattern by culprit diagnose --method vprof (the paper's algorithm)
#   contexts  rank of the first path through the root cause by culprit contexts
#
# "-" means not ranked at all. A summary per split (dev, heldout, new,
# heldout2, heldout3 and heldout4: cases written before a later round of changes to
# the method and analysed only after it) follows:
# how many cases each method ranks 1st and in the top 3, and right patterns.
#
#   bench/bugs.sh [-o OUTDIR] [-a | -r] [CASE...]
#
#   -o OUTDIR  where builds and recordings go (default bench/out/bugs)
#   -a         analyse again the recordings OUTDIR already holds (no new
#              runs), e.g. after a change of the method
#   -r         record only (build and record the runs, analyse nothing), e.g.
#              for held-out cases whose results must not be seen yet
#   CASE...    only these cases (default: every directory with a case.conf)
#
# CULPRIT=BINARY uses that culprit instead of building this tree's (with -a:
# another commit's method on the same recordings).
#
# Needs root (perf events), gcc, perf and jq; Debian cases also apt-get source.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/bugs
again=0
record_only=0
while getopts "o:ar" opt; do
	case $opt in
	o) out=$OPTARG ;;
	a) again=1 ;;
	r) record_only=1 ;;
	*) echo "usage: bench/bugs.sh [-o OUTDIR] [-a | -r] [CASE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
mkdir -p "$out"
out=$(cd "$out" && pwd)
culprit=$out/culprit
if [ -n "${CULPRIT:-}" ]; then
	culprit=$(realpath "$CULPRIT") # another build, e.g. main's, to compare methods on the same recordings
else
	(cd "$root" && CGO_ENABLED=0 go build -o "$culprit.new" ./cmd/culprit) && mv "$culprit.new" "$culprit"
fi

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
	for d in "$root"/bench/bugs/*/; do
		[ -f "$d/case.conf" ] && cases+=("$(basename "$d")")
	done
fi

start=$(date +%s)
# rank NAME: 1-based position of NAME in the lines of stdin, "-" if absent.
rank() { awk -v n="$1" '$0 == n { print NR; found = 1; exit } END { if (!found) print "-" }'; }

rows=()
for c in "${cases[@]}"; do
	dir=$root/bench/bugs/$c
	[ -f "$dir/case.conf" ] || { echo "no case $c ($dir/case.conf missing)" >&2; exit 2; }
	(
		# shellcheck disable=SC1091
		. "$dir/case.conf"
		w=$out/$c
		mkdir -p "$w"
		log=$w/log.txt
		if [ $again = 0 ] || [ ! -f "$w/buggy.ev.rec" ]; then
			: >"$log"
			if [ -x "$dir/build.sh" ]; then
				"$dir/build.sh" "$w/build"
			else
				"$root/bench/bugs/cprog.sh" "$dir" "$w/build"
			fi >>"$log" 2>&1 || { echo "$c: build failed, see $log" >&2; exit 1; }
			for mode in normal buggy; do
				rm -f "$w/$mode.rec" "$w/$mode.ev.rec" "$w/$mode.perf"
				"$dir/run.sh" "$w/build" $mode -- perf record -q -g -o "$w/$mode.perf" -- >>"$log" 2>&1 ||
					{ echo "$c: perf $mode run failed, see $log" >&2; exit 1; }
				"$dir/run.sh" "$w/build" $mode -- "$culprit" record --values -o "$w/$mode.rec" -- >>"$log" 2>&1 ||
					{ echo "$c: culprit --values $mode run failed, see $log" >&2; exit 1; }
				"$dir/run.sh" "$w/build" $mode -- "$culprit" record --events cpu,syscalls,sched -o "$w/$mode.ev.rec" -- >>"$log" 2>&1 ||
					{ echo "$c: culprit --events $mode run failed, see $log" >&2; exit 1; }
			done
		fi
		if [ $record_only = 1 ]; then
			echo "$c: recorded in $w" >&2
			exit 0
		fi
		perf_rank=$(perf report -i "$w/buggy.perf" --no-children --sort symbol -g none --stdio -q 2>/dev/null |
			sed -n 's/^ *[0-9.]*% *\[[.k]\] \([^ ]*\).*/\1/p' | rank "$ROOT_CAUSE")
		report_rank=$("$culprit" report "$w/buggy.rec" --format json 2>/dev/null | jq -r '.entries[].name' | rank "$ROOT_CAUSE")
		diag() { # diag JSON FLAGS...
			local j=$w/$1
			shift
			"$culprit" diagnose --normal "$w/normal.rec" --buggy "$w/buggy.rec" --top 0 --format json "$@" >"$j" 2>>"$log" || { echo "- -"; return; }
			r=$(jq -r '.functions[].name' "$j" | rank "$ROOT_CAUSE")
			p=$(jq -r --arg n "$ROOT_CAUSE" '[.functions[] | select(.name == $n)][0].pattern // "-"' "$j")
			echo "$r $p"
		}
		d=$(diag diagnose.json)
		d_rank=${d% *} d_pat=${d#* }
		v=$(diag vprof.json --method vprof)
		v_rank=${v% *} v_pat=${v#* }
		ctx_rank=$("$culprit" contexts --base "$w/normal.ev.rec" --buggy "$w/buggy.ev.rec" --top 0 --format json 2>>"$log" |
			jq -r --arg n "$ROOT_CAUSE" '[.paths[] | select(any(.frames[]; .name == $n)) | .rank][0] // "-"')
		mark() { [ "$1" = "$PATTERN" ] && echo "$1*" || echo "$1"; }
		echo "$NAME $SPLIT $KIND $PATTERN $ROOT_CAUSE $perf_rank $report_rank $d_rank $(mark "$d_pat") $v_rank $(mark "$v_pat") $ctx_rank" >"$w/row.txt"
	) || { echo "$c: failed" >&2; echo "$c ? ? ? ? ! ! ! ! ! ! !" >"$out/$c/row.txt"; }
	[ $record_only = 1 ] && continue
	rows+=("$(cat "$out/$c/row.txt")")
done
[ $record_only = 1 ] && exit 0

fmt="%-13s %-8s %-6s %-19s %-22s %5s %7s %9s %-20s %6s %-20s %9s\n"
printf "$fmt" case split kind pattern root-cause perf report diagnose "(pattern)" vprof "(pattern)" contexts
for split in dev heldout new heldout2 heldout3 heldout4; do
	for r in "${rows[@]}"; do
		set -- $r
		[ "$2" = "$split" ] && printf "$fmt" "$@"
	done
done
echo
for split in dev heldout new heldout2 heldout3 heldout4; do
	printf '%s\n' "${rows[@]}" | awk -v s="$split" '
		function top(x, k) { return x != "-" && x != "!" && x + 0 >= 1 && x + 0 <= k }
		$2 == s {
			n++
			p1 += top($6, 1); p3 += top($6, 3); r1 += top($7, 1); r3 += top($7, 3)
			d1 += top($8, 1); d3 += top($8, 3); dp += ($9 ~ /\*$/)
			v1 += top($10, 1); v3 += top($10, 3); vp += ($11 ~ /\*$/)
			c1 += top($12, 1); c3 += top($12, 3)
		}
		END {
			if (!n) { if (s == "dev" || s == "heldout") printf "%s: no cases\n", s; exit }
			printf "%s (%d cases), 1st / top 3: perf %d/%d, report %d/%d, diagnose %d/%d (pattern %d), vprof %d/%d (pattern %d), contexts %d/%d\n",
				s, n, p1, p3, r1, r3, d1, d3, dp, v1, v3, vp, c1, c3
		}'
done
echo "$(date -u +%Y-%m-%d), $((($(date +%s) - start))) s"
