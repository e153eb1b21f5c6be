#!/usr/bin/env bash
# The bug corpus: how each method ranks each case's root cause.
#
# For every case in bench/bugs/<case>/ (the format: docs/accuracy.md) it
# builds the program, records one normal and one buggy run with perf
# (perf record -g), R of each with culprit record --values (for report and
# diagnose; -R, default 1; with the schema of the case's PROGRAM, made
# once, when case.conf names one) and one of each with culprit record --events cpu,syscalls,sched
# (for contexts; recorded apart because tracing every system call and
# context switch costs kernel CPU time that would distort the CPU profiles
# of servers), and prints one row per case:
#
#   perf      rank of the root cause by self time in the buggy run (perf report --no-children)
#   report    the same by culprit report (self time)
#   diagnose  by culprit diagnose (default method), one analysis per pair of
#             recordings (normal k, buggy k): the median rank, and in how
#             many of the R pairs it ranks 1st, in the top 3, and gives the
#             right pattern
#   vprof     the same by culprit diagnose --method vprof (the paper's algorithm)
#   contexts  rank of the first path through the root cause by culprit contexts
#   ranks     diagnose's rank in each pair; * marks the right pattern
#
# "-" means not ranked at all (a median counts it below every rank). The own
# cases and the Debian ones are printed in separate tables. A summary per
# kind and split (dev, heldout, new, and heldout2 to heldout10: cases
# written before a later round of changes to the method and analysed only
# after it) follows: how many cases each method ranks 1st and in the top 3
# (by the median over the pairs), the cases whose pattern is right in most
# pairs, and of all pairs how many rank it 1st and in the top 3.
#
#   bench/bugs.sh [-o OUTDIR] [-R N] [-a | -r | -c | -t] [CASE...]
#
#   -o OUTDIR  where builds and recordings go (default bench/out/bugs)
#   -R N       record N normal and N buggy runs with --values (default 1, or
#              $BUGS_R); with -a, analyse the first N pairs OUTDIR holds
#   -a         analyse again the recordings OUTDIR already holds (no new
#              runs), e.g. after a change of the method; a case OUTDIR
#              holds no recordings of (no buggy.ev.rec) is built and
#              recorded first, as without -a (name the cases to avoid it)
#   -r         record only (build and record the runs, analyse nothing), e.g.
#              for held-out cases whose results must not be seen yet
#   -c         keep the recordings OUTDIR already holds and record only the
#              missing ones (after an interrupted run, or to add pairs); a
#              run that fails leaves no file behind to be kept
#   -t         print the table of the analyses OUTDIR already holds (its
#              row.txt files), running nothing
#   CASE...    only these cases (default: every directory with a case.conf)
#
# Pair 1 is normal.rec and buggy.rec, pair k > 1 normal.k.rec and buggy.k.rec.
#
# CULPRIT=BINARY uses that culprit instead of building this tree's (with -a:
# another commit's method on the same recordings). Recordings run one case
# at a time; each case's analyses run in the background while the next
# case records, BUGS_JOBS=N cases at a time (default 1; with -a, N cases'
# analyses at a time). BUGS_VPROF=0 leaves the vprof column out ("-").
# BUGS_VALUES=1 records only the value recordings and runs only diagnose
# (perf, report and contexts "-"): on a loaded machine the perf and
# --events runs take about as long as the value runs.
#
# Needs root (perf events), gcc, perf and jq; Debian cases also apt-get source.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/bugs
again=0
record_only=0
keep=0
table_only=0
pairs=${BUGS_R:-1}
while getopts "o:R:arct" opt; do
	case $opt in
	o) out=$OPTARG ;;
	R) pairs=$OPTARG ;;
	a) again=1 ;;
	r) record_only=1 ;;
	c) keep=1 ;;
	t) table_only=1 ;;
	*) echo "usage: bench/bugs.sh [-o OUTDIR] [-R N] [-a | -r | -c | -t] [CASE...]" >&2; exit 2 ;;
	esac
done
case $pairs in
'' | *[!0-9]* | 0) echo "bench/bugs.sh: -R wants a count of 1 or more, not \"$pairs\"" >&2; exit 2 ;;
esac
shift $((OPTIND - 1))
mkdir -p "$out"
out=$(cd "$out" && pwd)
culprit=$out/culprit
if [ $table_only = 1 ]; then
	: # nothing runs
elif [ -n "${CULPRIT:-}" ]; then
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
	[ -f "$root/bench/bugs/$c/case.conf" ] || { echo "no case $c ($root/bench/bugs/$c/case.conf missing)" >&2; exit 2; }
done
# one CASE [record|analyse|both]: records CASE's runs (unless -a finds
# them), analyses them, or both, leaving its row in OUTDIR/CASE/row.txt.
one() {
	c=$1 phase=${2:-both}
	dir=$root/bench/bugs/$c
	mkdir -p "$out/$c"
	(
		# shellcheck disable=SC1091
		. "$dir/case.conf"
		w=$out/$c
		mkdir -p "$w"
		log=$w/log.txt
		# timed LABEL CMD...: runs CMD, adding "LABEL wall user sys" (seconds;
		# user and system CPU time of CMD and every process it waited for)
		# to OUTDIR/CASE/times.txt.
		timed() { local l=$1; shift; /usr/bin/time -a -o "$w/times.txt" -f "$l %e %U %S" "$@"; }
		# rec K: the suffix of pair K's value recordings.
		rec() { [ "$1" = 1 ] && echo rec || echo "$1.rec"; }
		only=${BUGS_VALUES:-0}
		recorded=$w/buggy.ev.rec
		[ "$only" = 1 ] && recorded=$w/buggy.rec
		if [ "$phase" != analyse ] && { [ $again = 0 ] || [ ! -f "$recorded" ]; }; then
			[ $keep = 1 ] || : >"$log"
			[ $keep = 1 ] || : >"$w/times.txt"
			if [ -x "$dir/build.sh" ]; then
				timed build "$dir/build.sh" "$w/build"
			else
				timed build "$root/bench/bugs/cprog.sh" "$dir" "$w/build"
			fi >>"$log" 2>&1 || { echo "$c: build failed, see $log" >&2; exit 1; }
			# have FILE: with -c, whether FILE was recorded already (else
			# remove it).
			have() { [ $keep = 1 ] && [ -s "$1" ] && return 0; rm -f "$1"; return 1; }
			for mode in normal buggy; do
				[ "$only" = 1 ] && break
				# -N leaves perf's build-id cache (~/.debug) alone: perf report
				# reads the binaries where they are. perf 6.1 now and then
				# aborts at the end of a run ("assertion failed at
				# util/build-id.c", then "stack smashing detected"), a crash
				# of perf's, not of the case: a run that fails is run again.
				have "$w/$mode.perf" ||
					timed "perf-$mode" "$dir/run.sh" "$w/build" $mode -- perf record -q -N -g -o "$w/$mode.perf" -- >>"$log" 2>&1 ||
					timed "perf-$mode" "$dir/run.sh" "$w/build" $mode -- perf record -q -N -g -o "$w/$mode.perf" -- >>"$log" 2>&1 ||
					{ rm -f "$w/$mode.perf"; echo "$c: perf $mode run failed twice, see $log" >&2; exit 1; }
				have "$w/$mode.ev.rec" ||
					timed "events-$mode" "$dir/run.sh" "$w/build" $mode -- "$culprit" record --events cpu,syscalls,sched -o "$w/$mode.ev.rec" -- >>"$log" 2>&1 ||
					{ rm -f "$w/$mode.ev.rec"; echo "$c: culprit --events $mode run failed, see $log" >&2; exit 1; }
			done
			# The program's schema, made once per case when case.conf names
			# the program (PROGRAM, under the build directory): --values
			# alone makes it again in every value recording (14 s of CPU
			# for xmllint, with libxml2 linked in). --values=SCHEMA samples
			# that object only, so a case whose program has libraries of
			# its own, sampled too, names none (lib_scal, lib_missing).
			values=--values
			if [ -n "${PROGRAM:-}" ]; then
				s=$w/program.schema
				if [ ! -s "$s" ] || [ "$w/build/$PROGRAM" -nt "$s" ]; then
					timed schema "$culprit" schema "$w/build/$PROGRAM" -o "$s" >>"$log" 2>&1 ||
						{ rm -f "$s"; echo "$c: culprit schema $PROGRAM failed, see $log" >&2; exit 1; }
				fi
				values=--values=$s
			fi
			# The value recordings alternate normal and buggy, so that a
			# change of the machine's load falls on both kinds.
			for k in $(seq 1 "$pairs"); do
				for mode in normal buggy; do
					f=$w/$mode.$(rec "$k")
					have "$f" ||
						timed "values-$mode" "$dir/run.sh" "$w/build" $mode -- "$culprit" record "$values" -o "$f" -- >>"$log" 2>&1 ||
						{ rm -f "$f"; echo "$c: culprit --values $mode run $k failed, see $log" >&2; exit 1; }
				done
			done
		fi
		if [ $record_only = 1 ]; then
			echo "$c: recorded in $w" >&2
			exit 0
		fi
		[ "$phase" = record ] && exit 0
		# The analyses' times replace those of an earlier analysis.
		[ -f "$w/times.txt" ] && sed -i '/^\(perf-report\|report\|diagnose\|contexts\)/d' "$w/times.txt"
		perf_rank=- report_rank=- ctx_rank=-
		[ "$only" = 1 ] || perf_rank=$(timed perf-report perf report -i "$w/buggy.perf" --no-children --sort symbol -g none --stdio -q 2>/dev/null |
			sed -n 's/^ *[0-9.]*% *\[[.k]\] \([^ ]*\).*/\1/p' | rank "$ROOT_CAUSE")
		[ "$only" = 1 ] || report_rank=$(timed report "$culprit" report "$w/buggy.rec" --format json 2>/dev/null | jq -r '.entries[].name' | rank "$ROOT_CAUSE")
		diag() { # diag K JSON FLAGS...: rank and pattern on pair K
			local k=$1 j=$w/$2
			shift 2
			local lab=diagnose
			[ "${1:-}" = --method ] && lab=diagnose-$2
			timed "$lab" "$culprit" diagnose --normal "$w/normal.$(rec "$k")" --buggy "$w/buggy.$(rec "$k")" --top 0 --format json "$@" >"$j" 2>>"$log" || { echo "- -"; return; }
			r=$(jq -r '.functions[].name' "$j" | rank "$ROOT_CAUSE")
			p=$(jq -r --arg n "$ROOT_CAUSE" '[.functions[] | select(.name == $n)][0].pattern // "-"' "$j")
			echo "$r $p"
		}
		mark() { [ "$1" = "$PATTERN" ] && echo "$1*" || echo "$1"; }
		: >"$w/pairs.txt"
		for k in $(seq 1 "$pairs"); do
			[ -f "$w/normal.$(rec "$k")" ] && [ -f "$w/buggy.$(rec "$k")" ] || break
			sfx=; [ "$k" = 1 ] || sfx=.$k
			d=$(diag "$k" "diagnose$sfx.json")
			v="- -"
			[ "${BUGS_VPROF:-1}" = 0 ] || v=$(diag "$k" "vprof$sfx.json" --method vprof)
			echo "$k ${d% *} $(mark "${d#* }") ${v% *} $(mark "${v#* }")" >>"$w/pairs.txt"
		done
		[ -s "$w/pairs.txt" ] || { echo "$c: no pair of value recordings in $w" >&2; exit 1; }
		[ "$only" = 1 ] || ctx_rank=$(timed contexts "$culprit" contexts --base "$w/normal.ev.rec" --buggy "$w/buggy.ev.rec" --top 0 --format json 2>>"$log" |
			jq -r --arg n "$ROOT_CAUSE" '[.paths[] | select(any(.frames[]; .name == $n)) | .rank][0] // "-"')
		# Per method: the median rank (the middle one, the worse of the two
		# for an even count; "-" below every rank), the pairs ranking it 1st
		# and in the top 3 and those with the right pattern, over the pairs.
		summ() { # summ RANKFIELD PATFIELD
			awk -v rf="$1" -v pf="$2" '
				{ n++; r = $rf; x[n] = (r == "-" ? 1e9 : r + 0)
				  if (r != "-" && r + 0 == 1) a++
				  if (r != "-" && r + 0 <= 3) b++
				  if ($pf ~ /\*$/) p++ }
				END {
					for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
					m = x[int(n / 2) + 1]
					printf "%s %d/%d %d/%d %d/%d", (m >= 1e9 ? "-" : m), a, n, b, n, p, n
				}' "$w/pairs.txt"
		}
		ranks=$(awk '{ printf "%s%s%s", (NR > 1 ? "," : ""), $2, ($3 ~ /\*$/ ? "*" : "") }' "$w/pairs.txt")
		echo "$NAME $SPLIT $KIND $PATTERN $ROOT_CAUSE $perf_rank $report_rank $(summ 2 3) $(summ 4 5) $ctx_rank $ranks" >"$w/row.txt"
	) || { echo "$c: failed" >&2; echo "$c ? ? ? ? ! ! ! ! ! ! ! ! ! ! ! !" >"$out/$c/row.txt"; return 1; }
}
# Recordings run one case at a time, so that two recorded programs do not
# compete with each other; each case's analyses run in the background
# while the next case records, JOBS cases at a time ($BUGS_JOBS, default
# 1). With -a (nothing to record) the analyses run JOBS at a time.
jobs=${BUGS_JOBS:-1}
slot() { while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done; }
for c in "${cases[@]}"; do
	[ $table_only = 1 ] && break
	if [ $again = 1 ]; then
		slot
		one "$c" &
	else
		one "$c" record || continue
		[ $record_only = 1 ] && continue
		slot
		one "$c" analyse &
	fi
done
wait
[ $record_only = 1 ] && exit 0
for c in "${cases[@]}"; do
	if [ -f "$out/$c/row.txt" ]; then
		rows+=("$(cat "$out/$c/row.txt")")
	elif [ $table_only = 0 ]; then
		echo "$c: no row" >&2
	fi
done

fmt="%-21s %-8s %-19s %-28s %5s %6s | %4s %4s %4s %4s | %4s %4s %4s %4s | %8s  %s\n"
for kind in own debian; do
	n=0
	for r in "${rows[@]}"; do
		set -- $r
		[ "$3" = "$kind" ] && n=$((n + 1))
	done
	[ $n = 0 ] && continue
	echo "== $kind cases"
	printf "$fmt" "" "" "" "" "" "" "diagnose" "" "" "" "vprof" "" "" "" "" ""
	printf "$fmt" case split pattern root-cause perf report med 1st top3 pat med 1st top3 pat contexts "diagnose ranks (* right pattern)"
	for split in dev heldout new heldout2 heldout3 heldout4 heldout5 heldout6 heldout7 heldout8 heldout9 heldout10; do
		for r in "${rows[@]}"; do
			set -- $r
			[ "$2" = "$split" ] && [ "$3" = "$kind" ] && printf "$fmt" "$1" "$2" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "${12}" "${13}" "${14}" "${15}" "${16}" "${17}"
		done
	done
	echo
done
# The summary: per kind and split, then per kind. A case counts 1st (top 3)
# when its median rank is, and its pattern right when most pairs give it.
summary() { # summary LABEL KIND SPLIT ("" = any)
	printf '%s\n' "${rows[@]}" | awk -v label="$1" -v k="$2" -v s="$3" '
		function top(x, k) { return x != "-" && x != "!" && x + 0 >= 1 && x + 0 <= k }
		function num(f, i) { split(f, q, "/"); return q[i] + 0 }
		function most(f) { return num(f, 1) * 2 > num(f, 2) }
		$3 == k && (s == "" || $2 == s) {
			n++
			p1 += top($6, 1); p3 += top($6, 3); r1 += top($7, 1); r3 += top($7, 3)
			d1 += top($8, 1); d3 += top($8, 3); dp += most($11)
			v1 += top($12, 1); v3 += top($12, 3); vp += most($15)
			c1 += top($16, 1); c3 += top($16, 3)
			R += num($9, 2); D1 += num($9, 1); D3 += num($10, 1); DP += num($11, 1)
		}
		END {
			if (!n) exit
			printf "%s (%d cases), 1st / top 3: perf %d/%d, report %d/%d, diagnose %d/%d (pattern %d), vprof %d/%d (pattern %d), contexts %d/%d; diagnose over %d pairs: 1st %d, top 3 %d, pattern %d\n",
				label, n, p1, p3, r1, r3, d1, d3, dp, v1, v3, vp, c1, c3, R, D1, D3, DP
		}'
}
for kind in own debian; do
	for split in dev heldout new heldout2 heldout3 heldout4 heldout5 heldout6 heldout7 heldout8 heldout9 heldout10; do
		summary "$kind $split" $kind $split
	done
	summary "$kind, all" $kind ""
done
# Where the time went: per step, over the cases, the wall time and the CPU
# time (user + system) of the step's processes (times.txt; the analyses ran
# beside the next case's recording, so their wall times overlap it).
for c in "${cases[@]}"; do
	[ -f "$out/$c/times.txt" ] && cat "$out/$c/times.txt"
done | awk 'NF == 4 && $2 ~ /^[0-9.]+$/ { w[$1] += $2; u[$1] += $3 + $4; W += $2; U += $3 + $4; if (!($1 in o)) o[$1] = ++n; l[o[$1]] = $1 }
	END { if (!n) exit; printf "time per step (wall s / CPU s):"; for (i = 1; i <= n; i++) printf " %s %.0f/%.0f", l[i], w[l[i]], u[l[i]]; printf "; all %.0f/%.0f\n", W, U }'
echo "$(date -u +%Y-%m-%d), $((($(date +%s) - start))) s"
