#!/usr/bin/env bash
# The bug corpus with a trace of each buggy run's calls beside the sampled
# recordings: culprit diagnose --buggy-calls (docs/vprof.md, "Work done
# twice"), on the recordings bench/bugs.sh made.
#
# For each case of OUTDIR (bench/bugs.sh's, with its builds, pair 1's
# normal.rec and buggy.rec and their diagnosis diagnose.json) it traces one
# more buggy run with culprit trace --args, of the case's N top functions
# in that diagnosis that are the program's own and have a symbol (-n, default 10; the
# outermost traced call on a thread is a request), for at most D seconds
# (-d, default 20: the traps of a function called millions of times slow a
# run down many times over; the repeats are judged on what was traced),
# into OUTDIR/CASE/buggy.calls.rec, and diagnoses pair 1 again with it.
# It prints one row per case:
#
#   case split rank-before rank-after pattern-after repeats
#
# rank-before is diagnose.json's rank of the root cause, rank-after the
# rank with the trace, repeats the functions diagnose holds responsible for
# repeated work (evidence repeats: caller>callee:repeats/calls), "-" none.
#
#   bench/bugs-calls.sh [-o OUTDIR] [-n N] [-d SECONDS] [-k] [-r] [CASE...]
#
# -k keeps a trace OUTDIR/CASE/buggy.calls.rec already made (after a change
# of the method: diagnose again only); -r traces only (no diagnosis).
#
# CULPRIT=BINARY uses that culprit (default OUTDIR/culprit, as bench/bugs.sh
# builds it). Needs root, jq and nm (binutils).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/bugs
n=10
secs=20
keep=0
trace_only=0
while getopts "o:n:d:kr" opt; do
	case $opt in
	o) out=$OPTARG ;;
	n) n=$OPTARG ;;
	d) secs=$OPTARG ;;
	k) keep=1 ;;
	r) trace_only=1 ;;
	*) echo "usage: bench/bugs-calls.sh [-o OUTDIR] [-n N] [-d SECONDS] [-k] [-r] [CASE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
out=$(cd "$out" && pwd)
culprit=${CULPRIT:-$out/culprit}
[ -x "$culprit" ] || { echo "bench/bugs-calls.sh: no culprit at $culprit (run bench/bugs.sh first, or set CULPRIT)" >&2; exit 1; }
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
	for d in "$root"/bench/bugs/*/; do
		[ -f "$d/case.conf" ] && cases+=("$(basename "$d")")
	done
fi
rank() { awk -v n="$1" '!found && $0 == n { print NR; found = 1 } END { if (!found) print "-" }'; }
for c in "${cases[@]}"; do
	dir=$root/bench/bugs/$c
	w=$out/$c
	if [ ! -f "$w/diagnose.json" ] || [ ! -f "$w/buggy.rec" ]; then
		echo "$c: no diagnosis in $w (run bench/bugs.sh first)" >&2
		continue
	fi
	# shellcheck disable=SC1091
	. "$dir/case.conf"
	before=$(jq -r '.functions[].name' "$w/diagnose.json" | rank "$ROOT_CAUSE")
	exe=$(jq -r '.buggy[0].executable // ""' "$w/diagnose.json" | sed 's/ (build-id.*//')
	mapfile -t funcs < <(jq -r --arg exe "$exe" --argjson n "$n" \
		'[.functions[] | select(.object == $exe or $exe == "")][:$n][].name' "$w/diagnose.json")
	# Only functions with a symbol of their own (one the compiler inlined
	# everywhere has no entry to probe) that are called: not the entry
	# point, the C runtime's start-up code, nor a function's cold part.
	syms=$(nm --defined-only "$w/build/$(basename "$exe")" 2>/dev/null | awk '{ print $3 }' | sort -u)
	args=()
	for f in "${funcs[@]}"; do
		case $f in _start | _init | _fini | __do_global_dtors_aux | frame_dummy | register_tm_clones | deregister_tm_clones | *.cold | *.cold.*) continue ;; esac
		grep -qxF -- "$f" <<<"$syms" && args+=(-f "$f")
	done
	log=$w/calls.log
	if [ $keep = 1 ] && [ -s "$w/buggy.calls.rec" ]; then
		: # traced before
	elif ! "$dir/run.sh" "$w/build" buggy -- "$culprit" trace --args --duration "${secs}s" -o "$w/buggy.calls.rec" "${args[@]}" -- >"$log" 2>&1; then
		echo "$c: the traced run failed ($log)" >&2
		continue
	fi
	[ $trace_only = 1 ] && continue
	j=$w/diagnose.calls.json
	if ! "$culprit" diagnose --normal "$w/normal.rec" --buggy "$w/buggy.rec" --buggy-calls "$w/buggy.calls.rec" --format json -o "$j" 2>>"$log"; then
		echo "$c: diagnose failed ($log)" >&2
		continue
	fi
	after=$(jq -r '.functions[].name' "$j" | rank "$ROOT_CAUSE")
	pattern=$(jq -r --arg n "$ROOT_CAUSE" '[.functions[] | select(.name == $n)][0].pattern // "-"' "$j")
	[ "$pattern" = "$PATTERN" ] && pattern="$pattern*"
	reps=$(jq -r '[.functions[] | select(.repeats) | "\(.name)>\(.repeats.callee):\(.repeats.repeats)/\(.repeats.calls)"] | join(",") | if . == "" then "-" else . end' "$j")
	echo "$c $SPLIT $before $after $pattern $reps"
done
