#!/usr/bin/env bash
# Runs the whole test suite on a busy machine: one CPU-bound busy loop per
# core (or LOAD of them) runs for the whole time, and the suite runs RUNS times
# in a row on a fresh clone of REPO with CI=true (the command .ci/run runs,
# which is the README's). Prints pass/fail and the time of each run, the
# failing tests of a failed run, and exits non-zero if any run failed. The
# load is killed on every exit path (normal end, error, Ctrl-C, TERM).
# Needs root (the suite does) and gcc.
#
#   bench/busy-tests.sh [RUNS] [REPO]        # defaults: 3, this repository
#   LOAD=4 bench/busy-tests.sh 1             # four busy loops instead of nproc
set -euo pipefail
runs=${1:-3}
repo=${2:-$(cd "$(dirname "$0")/.." && pwd)}
load=${LOAD:-$(nproc)}

work=$(mktemp -d /tmp/culprit-busy-XXXXXX)
pids=() # the busy loops
suite=  # the process group of the suite run in progress
cleanup() {
	[ -n "$suite" ] && kill -TERM -- "-$suite" 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

git clone -q "$repo" "$work/src"
echo "busy-tests: $(git -C "$work/src" log -1 --format='%h %s' | cut -c1-72)"
for ((i = 0; i < load; i++)); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
echo "busy-tests: $load busy loops on $(nproc) CPUs; $runs runs of .ci/run (CI=true)"

failed=0
for ((r = 1; r <= runs; r++)); do
	log=$work/run$r.log
	start=$(date +%s)
	# In its own process group, waited for in the background, so that a
	# signal stops it at once and takes the whole run with it.
	(cd "$work/src" && CI=true exec setsid bash .ci/run) >"$log" 2>&1 &
	suite=$!
	if wait "$suite"; then
		res=PASS
	else
		res=FAIL
		failed=$((failed + 1))
	fi
	suite=
	secs=$(($(date +%s) - start))
	echo "run $r: $res in ${secs}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	if [ "$res" = FAIL ]; then
		grep -E '^ *--- FAIL|^(FAIL|panic:)' "$log" | sed 's/^/    /' | head -40 || true
		keep=/tmp/culprit-busy-run$r.log
		cp "$log" "$keep"
		echo "    full log: $keep"
	fi
done
echo "busy-tests: $((runs - failed)) of $runs runs passed"
[ "$failed" -eq 0 ]
