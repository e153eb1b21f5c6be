#!/usr/bin/env bash
# Perun's evaluation of its Tracer optimizations (Pavela 2020, §8), on eBPF:
# each case traces every function of BINARY (-f '*') with one optimization or
# pipeline, REPS times (the thesis: 6, the first dropped as warm-up, the
# median of the rest). Columns:
#   PT     median wall time of the whole culprit trace command, ms (reading
#          the call graph, setting probes, the run, removing them)
#   PRT    median of main's inclusive time, ms: the program's run under tracing
#   RDV    median recording size, KiB
#   PL     probed functions; PLR: those with a recorded call; calls: recorded
#   FC     share of PLR whose best model of duration against call order has
#          R² ≥ 0.5 (internal/analysis/models), %
#   hot    of the functions over 1% of the run's exclusive time, measured
#          untraced, how many were probed: the reference is REFRUNS (default
#          200) runs of culprit record -F 9999 of the same command; the
#          "+hot" pipelines judge what is hot by the first half of them
#          (--hot-from) and are checked against the other half; "+auto"
#          judges it by the CPU samples earlier traces of this script took
#          beside their probes (culprit trace --cpu-sample)
# PL/PLR/calls/FC/hot are from the last run. The Dynamic Stats the iterative
# methods read are the ones the earlier cases of this script left (a fresh
# directory each time; no-opt runs first), as the thesis precomputes them.
# REFFLAGS adds flags to the reference recordings (e.g. --call-graph dwarf
# for a program built without frame pointers, whose stacks must reach main).
# Diff tracing cases run only with OLDER set to an older build of BINARY;
# CASES (an extended regexp on the case names, e.g. 'no-opt|p:.*') runs
# only some (keep no-opt first: the others are compared with it).
# TRACEFLAGS adds flags to every case's trace (e.g. --cpu-sample 9999, to
# fill the build's pool of samples faster); ROOT names the function whose
# run PRT and "hot" measure (default main; tracemetrics --root); OUT
# moves the work directory (default bench/out/traceopt), so that two
# programs can be measured at once. REFDIR keeps the untraced reference
# elsewhere and reuses the recordings already there (they are CPU
# samples' shares, which the machine's load does not change: they can be
# taken before a quiet slot and the cases run in it).
#
#   bench/traceopt.sh BINARY [REPS] -- ARGS...
#
# The figures in docs/performance.md are for sqlite3 3.40.1 built from
# Debian's source as bench/traceattach.sh says.
set -euo pipefail
bin=$1
reps=${2:-6}
shift 2
[ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/bench/out/traceopt}
rm -rf "$out"
mkdir -p "$out"
(cd "$root" && go build -o "$out/culprit" ./cmd/culprit && go build -o "$out/tracemetrics" ./bench/tracemetrics)
export CULPRIT_TRACE_STATS=$out/stats

refruns=${REFRUNS:-200}
ref=${REFDIR:-$out/ref}
mkdir -p "$ref"
hotfrom=()
for i in $(seq "$refruns"); do
	# shellcheck disable=SC2086
	[ -s "$ref/$i.rec" ] || "$out/culprit" record -F 9999 ${REFFLAGS:-} -o "$ref/$i.rec" -- "$bin" "$@" >/dev/null 2>&1 || { echo "culprit record failed" >&2; exit 1; }
	[ "$i" -le $((refruns / 2)) ] && hotfrom+=(--hot-from "$ref/$i.rec")
done
check=()
for i in $(seq $((refruns / 2 + 1)) "$refruns"); do check+=("$ref/$i.rec"); done
HOT=${hotfrom[*]}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

cases=(
	"no-opt|"
	"cg:m|--call-graph-shaping match"
	"cg:t-s|--call-graph-shaping soft"
	"cg:t-r|--call-graph-shaping strict"
	"cg:p|--call-graph-shaping prune"
	"sb:c|--static-baseline constant"
	"db:s|--dynamic-baseline soft"
	"db:r|--dynamic-baseline strict"
	"ds:s|--dynamic-sampling soft"
	"ds:r|--dynamic-sampling strict"
	"dp|--dynamic-probing 100000"
	"dp:l|--dynamic-probing 10000"
	"dp:r|--dynamic-probing 20000 --reattach"
	"ts|--timed-sampling 1"
	"p:b|--optimize basic --keep-hot 0"
	"p:a|--optimize advanced --keep-hot 0"
	"p:f|--optimize full --keep-hot 0"
	"p:b+auto|--optimize basic"
	"p:b+hot|--optimize basic $HOT"
	"p:b+hot-dp|--optimize basic $HOT --no-optimize dynamic-probing"
	"p:b+hot-nb|--optimize basic $HOT --probe-budget 0"
	"p:a+hot|--optimize advanced $HOT"
	"p:f+hot|--optimize full $HOT"
)
if [ -n "${OLDER:-}" ]; then
	cases+=(
		"dt|--diff-tracing semi-strict --diff-base $OLDER"
		"dt:s|--diff-tracing soft --diff-base $OLDER"
		"dt:r|--diff-tracing strict --diff-base $OLDER"
		"p:a+dt|--optimize advanced --diff-base $OLDER"
		"p:f+dt|--optimize full --diff-base $OLDER"
	)
fi
printf '%-10s %8s %8s %8s %6s %6s %8s %6s  %s\n' case PT PRT RDV PL PLR calls FC hot
for c in "${cases[@]}"; do
	name=${c%%|*}
	flags=${c#*|}
	[[ -n "${CASES:-}" && ! "$name" =~ ^(${CASES})$ ]] && continue
	: >"$out/pt" && : >"$out/prt" && : >"$out/rdv"
	for i in $(seq "$reps"); do
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		"$out/culprit" trace ${TRACEFLAGS:-} $flags -f '*' -o "$out/case.rec" -- "$bin" "$@" >/dev/null 2>"$out/log" || { cat "$out/log"; exit 1; }
		t1=$(date +%s%N)
		m=$("$out/tracemetrics" --root "${ROOT:-main}" "$out/case.rec" "${check[@]}" 2>/dev/null)
		[ "$i" -eq 1 ] && [ "$reps" -gt 1 ] && continue
		echo $(((t1 - t0) / 1000000)) >>"$out/pt"
		echo "$m" | cut -f4 >>"$out/prt"
		echo $(($(stat -c %s "$out/case.rec") / 1024)) >>"$out/rdv"
	done
	IFS=$'\t' read -r pl plr calls _ fc hot <<<"$m"
	printf '%-10s %8s %8s %8s %6s %6s %8s %6s  %s\n' "$name" "$(median <"$out/pt")" "$(median <"$out/prt")" "$(median <"$out/rdv")" \
		"$pl" "$plr" "$calls" "$fc" "$hot"
done
echo "$(date -u +%Y-%m-%dT%H:%MZ); $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg)"
