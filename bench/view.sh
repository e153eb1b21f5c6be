#!/usr/bin/env bash
# culprit view on 1M samples: time to first paint, interaction latency and
# memory, in headless Chromium (bench/viewtime, chromedp).
#
# bench/reporttarget (two threads, a four-level call tree; -O2 with frame
# pointers) runs 2 s of CPU time per thread under `culprit record -F 9999`
# (about 40k samples), and bench/replicate repeats that recording's samples
# (real stacks, shifted in time) to 1M, each thread's samples placed on its
# CPU time (-cpu-clock: some 50 s, 2,500 cells of the time view, however
# busy the machine was while recording; on their wall times the span grew
# with the load, 575 s and 27,661 cells for a seed recorded at load 30). Not at -F 49999: the kernel
# throttles that rate to about 65k samples, the recorder falls behind its
# rings (two thirds of the samples lost their stack copy) and the run,
# its overhead charged to the target, took 502 s of wall time at load 30
# against 30 s at -F 9999 (2 samples of 41k lost). Then RUNS times:
# culprit view is started on it and Chromium, started beforehand, opens
# the time view and pprof's flame graph, a time range's flame graph (a
# new pprof UI built on the server) twice, and pprof's other views. Per
# run one line; then medians.
#
#   ready         culprit view started → URL printed (recording loaded);
#                 and its CPU time (user+sys, 10 ms ticks), which a busy
#                 machine does not inflate
#   open          culprit view started → the index drawn in Chromium (its
#                 links usable); and culprit's CPU time by then
#   time paint    navigation to the time view (which carries its data)
#                 → its heat map drawn (seen from chromedp; in
#                 parentheses, the page's own time to the frame that
#                 draws it, which the flame graph frame loading after it
#                 does not delay)
#   time data     GET time/data (what the page carries)
#   flame paint   navigation to pprof's flame graph → its boxes drawn; and
#                 the server's CPU time for it
#   range first   (once the server's builds ahead of use are over) a
#                 range's flame graph, navigated to, the first time (profile
#                 filtered, pprof UI built) → drawn; and the server's CPU
#                 time for it
#   range again   the same range again → drawn
#   range in place  another range chosen in the time view (its cell
#                 clicked twice), whose flame graph is drawn in place in
#                 the time view's frame (its stacks fetched as JSON and
#                 handed to pprof's script, no page loaded); the server
#                 builds the range's pprof UI. Per interaction in place:
#                 the page's own time (request → frame drawn, in the
#                 renderer; and in the targets' table, input: from the
#                 input event's timeStamp, the latency a user sees),
#                 the wall time seen from chromedp (the element found
#                 before the clock starts: from the mouse's press sent;
#                 and until chromedp's poll, every 5 ms, sees it), the
#                 renderer's thread time (Performance.getMetrics
#                 TaskDuration) and the server's CPU time: the last two
#                 are what a busy machine does not inflate
#   in place again  the first range chosen again in the time view: the
#                 server answers from what it kept; against "again",
#                 which loads the same range's page
#   filter in place  on the whole flame graph, a function (mid_compute;
#                 the widest named box below the root when mid_compute's
#                 box is too narrow for its name) hidden from pprof's
#                 action menu: drawn in place; "loaded": the same query's
#                 page loaded afresh
#   top paint     navigation to pprof's top page (kept) → its table drawn:
#                 what any of pprof's pages costs Chromium here
#   flame from top  the whole flame graph chosen in top's View menu, put
#                 in place of top in the same document (its HTML fetched,
#                 head and body swapped, pprof's scripts run): the page's
#                 own time (click → frame drawn), wall, renderer thread
#                 time and server CPU; against "flame graph paint"
#   top filter    on top, a function (mid_compute) hidden (its row
#                 selected, Refine, Hide): put in place, as above;
#                 "loaded": the same query's page loaded afresh
#   flame from index  the whole flame graph clicked on culprit's index,
#                 put in place of the index the same way
#   time from index  the time view clicked on culprit's index, put in
#                 place of the index the same way (its maps drawn);
#                 against "time view paint", its page loaded
#   fn from index  a function's page (its form) clicked on the index, put
#                 in place of the index the same way
#   fn form       on it, a function's name (mid_compute) sent by its form:
#                 its page put in place (the server selects the
#                 function's samples, per thread)
#   fn from top   on pprof's top of another function (worker), culprit's
#                 Function link atop it: that function's page put in place
#   fn loaded     the function page of mid_compute loaded afresh
#   fn GET        GET a function's page, asked for the first time
#   first GET     on a second server, of the recording of the same
#                 program with system calls and context switches (repeated
#                 to 1M samples and events) against that recording as
#                 base: GET the latency, contexts and off-CPU pages, the
#                 first time (the analysis run on the server)
#   latency ...   then, put in place: latency clicked on the index,
#                 contexts atop latency, the off-CPU flame graph atop
#                 contexts (its page a redirect to pprof's flame graph),
#                 the off-CPU flame graph atop latency (a page with no
#                 frames to tear down), latency atop the off-CPU flame
#                 graph. Each click waits for the page and its frames
#                 loaded (the contexts page's heat map and tree) and the
#                 server idle; "off-CPU early" is off-CPU clicked on
#                 contexts as soon as its link shows, its frames loading
#   analyses' pages  (a table of their own) diagnose, traced calls,
#                 variance, stored runs and models, each input on a server
#                 of its own (below): ready and open as above; first GET,
#                 the page asked for as soon as the index is drawn (a
#                 page not yet built is answered at once with a page
#                 saying so); built, from then until the page itself
#                 is answered (its build ahead of use, its analysis
#                 run, if not over); for diagnose, its time view opened
#                 right after the index: the maps drawn, and every lane
#                 of sampled values drawn, then a range selected in its
#                 maps twice (a second, then the next), its lanes of
#                 values drawn again for it; the server's CPU time once
#                 its builds ahead are over; paint, the page loaded by
#                 navigation → drawn (renderer ms, kB); then, the server
#                 idle, the page clicked on the index, put in place, the
#                 first time and again; and links on it, put in place: a
#                 function's name (diagnose, traced calls, variance, when
#                 linked), models atop the stored runs, the oldest
#                 commit's check and models atop the models
#   renderer      per page drawn, the renderer's thread time (Chromium's
#                 Performance.getMetrics TaskDuration, thread ticks: what
#                 a busy machine does not inflate) and the page's kB
#   top, graph    GET pprof's top and call graph views (function views,
#                 built from the profile merged to functions)
#   peek          GET pprof's callers/callees of worker (lines)
#   source,       GET pprof's source and disassembly of worker (addresses;
#   disasm        disasm runs objdump)
#   again         the five GETs above once more: the slowest of them
#   peak RSS      culprit view's VmHWM at the end
#
#   bench/view.sh [RUNS [BASE-REV]]
#
# RUNS is 1 by default. The output ends with a table of the figures of
# the view's targets (open < 2 s, an interaction < 100 ms), each with its
# run; the wide tables above it have every figure. The inputs (below)
# live in INPUTS=DIR, bench/out/view by default; those missing there are
# made there, each group's time printed, and linked into bench/out/view,
# where the runs start. Keep them outside a worktree (removing one
# deletes its ignored files): INPUTS=/var/tmp/DIR, then every later run
# with the same INPUTS reuses them. Their making is timed in
# docs/performance.md (section `culprit view` on 1M samples); a run on
# them takes minutes more, most of it diagnose's analysis of the
# 1M-values pair, which the run waits for.
#
# With BASE-REV (a git revision), culprit built at that revision runs
# too, each run right after the current one's on the same recording, and
# a second row gives its medians: the two rows compare on one machine at
# one load. What a build lacks (a page, a link, a page put in place
# rather than loaded) is not timed in its runs, and said after the
# tables; its cells are "-".
#
# The analyses' inputs, made here: for diagnose, a normal and a buggy
# recording with sampled values (testdata/targets/vprof_wrong.c recorded,
# its samples repeated with values written at each by bench/genvalues,
# DIAG_VALUES value samples in the two together, default 4M: about 60k
# CPU samples and 2M values each; and at 1M samples, a row of its own,
# DIAG_BIG_VALUES in the two, default 64M: 1M CPU samples and 32M values
# each, 1 GB a recording, which BASE-REV does not run: a culprit that
# holds every value would need some 13 GB; DIAG_BIG=0 neither makes nor
# runs that pair, when only the 1M-sample clicks are wanted: it takes
# most of the inputs' making); for traced calls, `culprit trace -f
# fib` of testdata/targets/tracecalls.c, fib 24 (150,049 calls) against
# fib 22 as base; for variance, `culprit variance --start handle` of
# testdata/targets/varpool.c, 2000 requests on 4 workers; for the stored
# runs and models, a git repository of 4 commits of a program whose scan
# turns quadratic at the third, each run 2 times at n = 1000, 2000 and
# 4000 (`culprit run --param n=N`, 24 runs), culprit view run there.
#
# Needs root (culprit record), gcc, git, go and chromium.
set -euo pipefail
runs=${1:-1}
baserev=${2:-}
diag_values=${DIAG_VALUES:-4000000}
diag_big_values=${DIAG_BIG_VALUES:-64000000}
diag_big=${DIAG_BIG:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/view
head=$(git -C "$root" rev-parse --short HEAD) # what is built below
mkdir -p "$out"
(cd "$root" && CGO_ENABLED=0 go build -o "$out/culprit" ./cmd/culprit)
(cd "$root" && go build -o "$out/viewtime" ./bench/viewtime)
if [[ -n $baserev ]]; then
	tree=$(mktemp -d)
	trap 'rm -rf "$tree"' EXIT
	git -C "$root" archive "$baserev" | tar -x -C "$tree"
	(cd "$tree" && CGO_ENABLED=0 go build -o "$out/culprit.base" ./cmd/culprit)
fi
(cd "$root" && go build -o "$out/replicate" ./bench/replicate && go build -o "$out/genvalues" ./bench/genvalues)
chromium=$(command -v chromium || command -v chromium-browser)
cd "$out"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# culprit $head, $("$chromium" --version 2>/dev/null | head -1), $(go version | cut -d' ' -f3)"
# The inputs (recordings, the store and the programs they were made of,
# which the views symbolize from) live in one directory, $inputs: INPUTS,
# or bench/out/view. make_inputs makes there those that are missing, one
# group at a time, each written under a temporary name and renamed when
# whole, so an interrupted run leaves nothing half made.
inputs=${INPUTS:-$out}
mkdir -p "$inputs"
inputs=$(cd "$inputs" && pwd -P)
c=$out/culprit
t=$SECONDS
# made WHAT: WHAT and the seconds since the last step.
made() {
	echo "# $1 (made in $((SECONDS - t)) s)"
	t=$SECONDS
}
make_inputs() {
	if [[ ! -e big.rec ]]; then
		gcc -O2 -g -fno-omit-frame-pointer -pthread -o target "$root/bench/reporttarget/main.c"
		"$c" record -F 9999 -o small.rec -- ./target 2 2 2>rec.txt >/dev/null
		"$out/replicate" -cpu-clock -n 1000000 small.rec big.rec.tmp
		mv big.rec.tmp big.rec
		made "$(grep -o '[0-9][0-9]* samples' rec.txt | tail -1) recorded, repeated to 1000000 ($(stat -c %s big.rec) bytes)"
	fi
	if [[ ! -e bigevents.rec || ! -e events.rec ]]; then
		[[ -e target ]] || gcc -O2 -g -fno-omit-frame-pointer -pthread -o target "$root/bench/reporttarget/main.c"
		"$c" record --events cpu,syscalls,sched -F 9999 -o events.rec.tmp -- ./target 2 2 2>rec.events.txt >/dev/null
		"$out/replicate" -n 1000000 events.rec.tmp bigevents.rec.tmp
		mv bigevents.rec.tmp bigevents.rec
		mv events.rec.tmp events.rec
		made "with kernel events: $(grep -o '[0-9][0-9]* samples' rec.events.txt | tail -1) recorded (samples and events), repeated to 1000000, against the recording as base"
	fi
	# The analyses' inputs.
	if [[ ! -e vprof-seed.rec ]]; then
		gcc -O2 -g -pthread -o vprof_wrong "$root/testdata/targets/vprof_wrong.c"
		"$c" record -o vprof-seed.rec.tmp -- ./vprof_wrong buggy >/dev/null 2>rec.seed.txt
		mv vprof-seed.rec.tmp vprof-seed.rec
		made "vprof_wrong recorded"
	fi
	if [[ ! -e vprof-normal.rec || ! -e vprof-buggy.rec ]]; then
		"$out/genvalues" -values "$diag_values" vprof-seed.rec vprof-normal.rec.tmp vprof-buggy.rec.tmp 2>gen.txt
		mv vprof-normal.rec.tmp vprof-normal.rec
		mv vprof-buggy.rec.tmp vprof-buggy.rec
		made "diagnose: $(grep -o '[0-9]* samples' gen.txt | tail -1) and $((diag_values / 2)) values in each of the normal and buggy recordings (vprof_wrong's samples repeated, values by bench/genvalues)"
	fi
	if [[ $diag_big != 0 && (! -e vprof-normal-big.rec || ! -e vprof-buggy-big.rec) ]]; then
		"$out/genvalues" -values "$diag_big_values" vprof-seed.rec vprof-normal-big.rec.tmp vprof-buggy-big.rec.tmp 2>gen-big.txt
		mv vprof-normal-big.rec.tmp vprof-normal-big.rec
		mv vprof-buggy-big.rec.tmp vprof-buggy-big.rec
		made "diagnose at scale: $(grep -o '[0-9]* samples' gen-big.txt | tail -1) and $((diag_big_values / 2)) values in each ($(stat -c %s vprof-buggy-big.rec) bytes)"
	fi
	if [[ ! -e trace-base.rec || ! -e trace.rec ]]; then
		gcc -O2 -g -pthread -o tracecalls "$root/testdata/targets/tracecalls.c"
		"$c" trace -f fib -o trace-base.rec.tmp -- ./tracecalls fib 22 >/dev/null 2>&1
		"$c" trace -f fib -o trace.rec.tmp -- ./tracecalls fib 24 >/dev/null 2>rec.trace.txt
		mv trace-base.rec.tmp trace-base.rec
		mv trace.rec.tmp trace.rec
		made "traced calls: $(grep -o '[0-9]* calls of [0-9]* function' rec.trace.txt | head -1 | cut -d' ' -f1) calls of fib 24 against fib 22"
	fi
	if [[ ! -e variance.rec ]]; then
		gcc -O2 -g -pthread -o varpool "$root/testdata/targets/varpool.c"
		"$c" variance --start handle --round-intervals 500 -o variance.rec.tmp -- ./varpool dominant 2000 4 >/dev/null 2>&1
		mv variance.rec.tmp variance.rec
		made "variance: 2000 requests of varpool dominant on 4 workers"
	fi
	if [[ ! -e store-runs/made ]]; then
		make_store
		made "stored runs: 4 commits, 2 runs each at n = 1000, 2000, 4000"
	fi
}
# make_store: the history store, 4 commits (the second documentation
# only), the scan quadratic from the third, the checksum 4x faster at the
# fourth. In place (its runs name the programs they ran by their paths);
# store-runs/made says it is whole.
make_store() {
	rm -rf store store-runs
	mkdir -p store store-runs
	git -C store init -q
	for i in 1 2 3 4; do
		case $i in
		1 | 2) scan='for (long i = 0; i < n * 6000; i++) h = h * 2862933555777941757UL + (unsigned long)i;' ;;
		*) scan='for (long i = 0; i < n; i++) for (long j = 0; j < n * 3; j++) h = h * 2862933555777941757UL + (unsigned long)j;' ;;
		esac
		checksum=$((i == 4 ? 3000 : 12000))
		cat >store/prog.c <<-EOF
	#include <stdio.h>
	#include <stdlib.h>
	static volatile unsigned long sink;
	__attribute__((noinline)) void setup(long n) { unsigned long h = 1; for (long i = 0; i < n * 6000; i++) h = h * 6364136223846793005UL + (unsigned long)i; sink += h; }
	__attribute__((noinline)) void scan(long n) { unsigned long h = 3; $scan sink += h; }
	__attribute__((noinline)) void checksum(long n) { unsigned long h = 7; for (long i = 0; i < n * $checksum; i++) h = h * 3202034522624059733UL + (unsigned long)i; sink += h; }
	int main(int argc, char **argv) { long n = argc > 1 ? atol(argv[1]) : 1000; setup(n); scan(n); checksum(n); printf("%lu\n", sink); return 0; }
	EOF
		if ((i == 2)); then # documentation only
			echo "prog: a program for the bench" >store/README.md
			git -C store add README.md
		fi
		git -C store add prog.c
		git -C store -c user.name=bench -c user.email=bench@example.com commit -q -m "version $i"
		gcc -O1 -g -fno-omit-frame-pointer -o store/prog store/prog.c
		for n in 1000 2000 4000; do
			for r in 1 2; do
				(cd store && "$c" run -F 1999 -o "../store-runs/c$i-$n-$r.rec" --param n=$n -- ./prog $n >/dev/null 2>&1)
			done
		done
	done
	touch store-runs/made
}
names=(big.rec bigevents.rec events.rec vprof-normal.rec vprof-buggy.rec vprof-normal-big.rec vprof-buggy-big.rec trace-base.rec trace.rec variance.rec store store-runs)
(cd "$inputs" && make_inputs)
if [[ $inputs != $(pwd -P) ]]; then
	for f in "${names[@]}"; do
		rm -rf "${f:?}"
		if [[ -e $inputs/$f ]]; then
			ln -s "$inputs/$f" "$f"
		fi
	done
fi
echo "# inputs in $inputs (big.rec made $(date -u -r "$inputs/big.rec" '+%Y-%m-%d %H:%M UTC')); $SECONDS s so far"
analyses=(-diagnose-normal vprof-normal.rec -diagnose-buggy vprof-buggy.rec -trace-base trace-base.rec -trace trace.rec -variance variance.rec -store store)
: >runs.txt
: >runs.base.txt
: >runs.big.txt
# vt FILE ARGS...: one run of viewtime, its figures appended to FILE; a
# run that fails (a deadline on a loaded machine) is reported and left
# out, so the other builds' runs and the tables still come.
vt() {
	local file=$1 o
	shift
	echo "# \$ (cd bench/out/view && ./viewtime $*)"
	if o=$(./viewtime "$@"); then
		printf '%s\n' "$o" | tee -a "$file"
	else
		printf '%s\n' "$o"
		echo "# a run of viewtime failed; it is left out of $file" >&2
	fi
}
for ((i = 0; i < runs; i++)); do
	vt runs.txt -deadline 20m -culprit ./culprit -chromium "$chromium" -events bigevents.rec -events-base events.rec "${analyses[@]}" big.rec
	if [[ -n $baserev ]]; then
		vt runs.base.txt -deadline 20m -culprit ./culprit.base -chromium "$chromium" -events bigevents.rec -events-base events.rec "${analyses[@]}" big.rec
	fi
	[[ $diag_big == 0 ]] || vt runs.big.txt -analyses-only -deadline 40m -culprit ./culprit -chromium "$chromium" -diagnose-key diagbig -diagnose-normal vprof-normal-big.rec -diagnose-buggy vprof-buggy-big.rec x
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR == 0 ? "-" : NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "| culprit (1M samples) | ready ms (CPU ms) | open ms (CPU ms) | time view paint ms (in page) | time data ms | flame graph paint ms (server CPU ms) | range flame graph first ms (server CPU ms) | again ms | range in place: page ms, wall ms (renderer ms, server CPU ms) | range in place again: page ms, wall ms (renderer ms) | filter in place: page ms, wall ms (renderer ms, server CPU ms) | filter loaded ms | top paint ms | flame from top in place: page ms, wall ms (renderer ms, server CPU ms) | top filter in place: page ms, wall ms (renderer ms, server CPU ms) | top filter loaded ms | flame from index in place: page ms, wall ms (renderer ms, server CPU ms) | time from index in place: page ms, wall ms (renderer ms, server CPU ms) | fn from index in place: page ms, wall ms (renderer ms, server CPU ms) | fn form in place: page ms, wall ms (renderer ms, server CPU ms) | fn from top in place: page ms, wall ms (renderer ms, server CPU ms) | fn loaded ms | fn GET ms | first GET ms: latency, contexts, off-CPU | latency from index in place: page ms, wall ms (renderer ms, server CPU ms) | contexts from latency in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU from contexts in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU early from contexts in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU from latency in place: page ms, wall ms (renderer ms, server CPU ms) | latency from off-CPU in place: page ms, wall ms (renderer ms, server CPU ms) | renderer ms: flame, range, top (page kB) | top ms | graph ms | peek ms | source ms | disasm ms | views again, max ms | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# mib KIB: KIB in MiB, or "-" when no run gave it.
mib() { if [[ $1 == - ]]; then echo -; else echo $(($(cut -d. -f1 <<<"$1") / 1024)); fi; }
row() {
	local file=$1 name=$2
	get() { tr ' ' '\n' <"$file" | grep "^$1=" | cut -d= -f2 | median; }
	echo "| $name | $(get ready_ms) ($(get ready_cpu_ms)) | $(get open_ms) ($(get open_cpu_ms)) | $(get time_view_paint_ms) ($(get time_view_drawn_ms)) | $(get time_data_ms) | $(get flamegraph_paint_ms) ($(get flamegraph_cpu_ms)) | $(get range_flamegraph_first_ms) ($(get range_cpu_ms)) | $(get range_flamegraph_again_ms) | $(get range_inplace_page_ms), $(get range_inplace_ms) ($(get range_inplace_task_ms), $(get range_inplace_cpu_ms)) | $(get range_inplace_again_page_ms), $(get range_inplace_again_ms) ($(get range_inplace_again_task_ms)) | $(get filter_inplace_page_ms), $(get filter_inplace_ms) ($(get filter_inplace_task_ms), $(get filter_inplace_cpu_ms)) | $(get filter_loaded_ms) | $(get top_paint_ms) | $(get flame_swap_page_ms), $(get flame_swap_ms) ($(get flame_swap_task_ms), $(get flame_swap_cpu_ms)) | $(get top_filter_swap_page_ms), $(get top_filter_swap_ms) ($(get top_filter_swap_task_ms), $(get top_filter_swap_cpu_ms)) | $(get top_filter_loaded_ms) | $(get flame_index_swap_page_ms), $(get flame_index_swap_ms) ($(get flame_index_swap_task_ms), $(get flame_index_swap_cpu_ms)) | $(get time_index_swap_page_ms), $(get time_index_swap_ms) ($(get time_index_swap_task_ms), $(get time_index_swap_cpu_ms)) | $(get fn_index_swap_page_ms), $(get fn_index_swap_ms) ($(get fn_index_swap_task_ms), $(get fn_index_swap_cpu_ms)) | $(get fn_form_swap_page_ms), $(get fn_form_swap_ms) ($(get fn_form_swap_task_ms), $(get fn_form_swap_cpu_ms)) | $(get fn_top_swap_page_ms), $(get fn_top_swap_ms) ($(get fn_top_swap_task_ms), $(get fn_top_swap_cpu_ms)) | $(get fn_loaded_ms) | $(get fn_get_ms) | $(get latency_first_get_ms), $(get contexts_first_get_ms), $(get offcpu_first_get_ms) | $(get latency_index_swap_page_ms), $(get latency_index_swap_ms) ($(get latency_index_swap_task_ms), $(get latency_index_swap_cpu_ms)) | $(get contexts_swap_page_ms), $(get contexts_swap_ms) ($(get contexts_swap_task_ms), $(get contexts_swap_cpu_ms)) | $(get offcpu_swap_page_ms), $(get offcpu_swap_ms) ($(get offcpu_swap_task_ms), $(get offcpu_swap_cpu_ms)) | $(get offcpu_early_swap_page_ms), $(get offcpu_early_swap_ms) ($(get offcpu_early_swap_task_ms), $(get offcpu_early_swap_cpu_ms)) | $(get offcpu_latency_swap_page_ms), $(get offcpu_latency_swap_ms) ($(get offcpu_latency_swap_task_ms), $(get offcpu_latency_swap_cpu_ms)) | $(get latency_offcpu_swap_page_ms), $(get latency_offcpu_swap_ms) ($(get latency_offcpu_swap_task_ms), $(get latency_offcpu_swap_cpu_ms)) | $(get flame_task_ms), $(get range_task_ms), $(get top_task_ms) ($(get flame_kb), $(get range_kb), $(get top_kb)) | $(get top_ms) | $(get graph_ms) | $(get peek_ms) | $(get source_ms) | $(get disasm_ms) | $(get views_again_max_ms) | $(mib "$(get peak_rss_kib)") |"
}
row runs.txt "$head"
if [[ -n $baserev ]]; then
	row runs.base.txt "$(git -C "$root" rev-parse --short "$baserev")"
fi
# What a build lacks (a page, or a page put in place) is not timed in
# its runs: viewtime says so (skipped=...), and so does this.
for f in runs.txt runs.base.txt; do
	if grep -q skipped= "$f"; then
		echo "# not timed in $f (the build lacks them): $(grep -o 'skipped=[^ ]*' "$f" | cut -d= -f2 | tr ',' '\n' | sort -u | paste -sd, -)"
	fi
done
# The analyses' pages: a row per page and build.
echo
echo "| culprit | page | ready ms (CPU ms) | open ms | first GET ms (built ms) | server CPU ms, builds over | paint ms (renderer ms, kB) | from index in place: page ms, wall ms (renderer ms, server CPU ms) | again | links in place: page ms, wall ms (renderer ms, server CPU ms) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
arow() {
	local file=$1 name=$2 srv=$3 pg=$4
	shift 4
	get() { tr ' ' '\n' <"$file" | grep "^$1=" | cut -d= -f2 | median; }
	swap() { echo "$(get "$1"_page_ms), $(get "$1"_ms) ($(get "$1"_task_ms), $(get "$1"_cpu_ms))"; }
	local links="" l
	for l in "$@"; do
		if grep -q "$l"_page_ms= "$file"; then
			links+="${links:+; }${l%_swap}: $(swap "$l")"
		fi
	done
	echo "| $name | $pg | $(get "$srv"_ready_ms) ($(get "$srv"_ready_cpu_ms)) | $(get "$srv"_open_ms) | $(get "$pg"_first_get_ms) ($(get "$pg"_built_ms)) | $(get "$srv"_built_cpu_ms) | $(get "$pg"_paint_ms) ($(get "$pg"_task_ms), $(get "$pg"_kb)) | $(swap "$pg"_index_swap) | $(swap "$pg"_index_again_swap) | ${links:--} |"
}
arows() {
	arow "$1" "$2" diagnose diagnose diagnose_fn_swap
	arow "$1" "$2" trace trace trace_fn_swap
	arow "$1" "$2" variance variance variance_fn_swap
	arow "$1" "$2" store history models_history_swap
	arow "$1" "$2" store models history_rev_swap models_rev_swap
}
arows runs.txt "$head"
[[ $diag_big == 0 ]] || arow runs.big.txt "$head, 1M samples and $((diag_big_values / 2)) values a side" diagbig diagbig diagbig_fn_swap
if [[ -n $baserev ]]; then
	arows runs.base.txt "$(git -C "$root" rev-parse --short "$baserev")"
fi
# diagnose's time view, opened at once: maps, then every lane of values.
tv() {
	local file=$1 name=$2
	get() { tr ' ' '\n' <"$file" | grep "^$1=" | cut -d= -f2 | median; }
	local k=${3:-diagnose}
	echo "# $name: $k's time view opened at once: maps drawn $(get "$k"_time_paint_ms) ms, its $(get "$k"_time_lanes) lanes of values drawn $(get "$k"_time_lanes_ms) ms after navigation; a range selected, its lanes drawn $(get "$k"_lanes_range1_ms) ms, another $(get "$k"_lanes_range2_ms) ms"
}
tv runs.txt "$head"
[[ $diag_big == 0 ]] || tv runs.big.txt "$head" diagbig
if [[ -n $baserev ]]; then
	tv runs.base.txt "$(git -C "$root" rev-parse --short "$baserev")"
fi
# The figures of the view's targets (open < 2 s, an interaction
# < 100 ms), one a line, with the run that made them (and BASE-REV's
# median of its runs paired, of the first file's figures).
echo
echo "| figure | median | runs | run |${baserev:+ $baserev, paired |}"
echo "|---|---|---|---|${baserev:+---|}"
key() {
	local file=$1 k=$2 what=$3 run=$4 v n b=""
	v=$(tr ' ' '\n' <"$file" | { grep "^$k=" || true; } | cut -d= -f2 | median)
	n=$(tr ' ' '\n' <"$file" | grep -c "^$k=" || true)
	if [[ -n $baserev ]]; then
		b=" $(if [[ $file == runs.txt ]]; then tr ' ' '\n' <runs.base.txt | { grep "^$k=" || true; } | cut -d= -f2 | median; else echo -; fi) |"
	fi
	echo "| $what | $v | $n | $run |$b"
}
m="viewtime ... big.rec (1M samples)"
key runs.txt ready_ms "ready: culprit view started → URL printed, ms" "$m"
key runs.txt open_ms "open: → the index drawn in Chromium, ms" "$m"
key runs.txt time_view_paint_ms "time view loaded → its maps drawn, ms" "$m"
key runs.txt range_inplace_ms "a range chosen in the time view → its flame graph drawn in place, wall ms" "$m"
key runs.txt range_inplace_input_ms "a range chosen in the time view → its flame graph drawn in place, input → frame drawn in the page, ms" "$m"
key runs.txt range_inplace_again_ms "the first range chosen again, wall ms" "$m"
key runs.txt range_inplace_again_input_ms "the first range chosen again, input → frame drawn in the page, ms" "$m"
key runs.txt filter_inplace_ms "a function hidden on the flame graph, in place, wall ms" "$m"
key runs.txt filter_inplace_input_ms "a function hidden on the flame graph, in place, input → frame drawn in the page, ms" "$m"
key runs.txt flame_swap_ms "flame graph from top's View menu, in place, wall ms" "$m"
key runs.txt flame_swap_input_ms "flame graph from top's View menu, in place, input → frame drawn in the page, ms" "$m"
key runs.txt top_filter_swap_ms "a function hidden on top, in place, wall ms" "$m"
key runs.txt top_filter_swap_input_ms "a function hidden on top, in place, input → frame drawn in the page, ms" "$m"
key runs.txt flame_index_swap_ms "flame graph clicked on the index, in place, wall ms" "$m"
key runs.txt flame_index_swap_input_ms "flame graph clicked on the index, in place, input → frame drawn in the page, ms" "$m"
key runs.txt time_index_swap_ms "time view clicked on the index, in place, wall ms" "$m"
key runs.txt time_index_swap_input_ms "time view clicked on the index, in place, input → frame drawn in the page, ms" "$m"
key runs.txt fn_form_swap_ms "a function's page from its form, in place, wall ms" "$m"
key runs.txt fn_form_swap_input_ms "a function's page from its form, in place, input → frame drawn in the page, ms" "$m"
key runs.txt latency_index_swap_ms "latency clicked on the index (1M events), in place, wall ms" "$m"
key runs.txt latency_index_swap_input_ms "latency clicked on the index (1M events), in place, input → frame drawn in the page, ms" "$m"
key runs.txt contexts_swap_ms "contexts atop latency, in place, wall ms" "$m"
key runs.txt contexts_swap_input_ms "contexts atop latency, in place, input → frame drawn in the page, ms" "$m"
key runs.txt offcpu_swap_ms "off-CPU flame graph atop contexts, in place, wall ms" "$m"
key runs.txt offcpu_swap_input_ms "off-CPU flame graph atop contexts, in place, input → frame drawn in the page, ms" "$m"
key runs.txt views_again_max_ms "pprof's views asked again, the slowest, ms" "$m"
key runs.txt peak_rss_kib "peak RSS, KiB" "$m"
if [[ $diag_big != 0 ]]; then
	m="viewtime -analyses-only -diagnose-key diagbig (1M samples, $((diag_big_values / 2)) values a side)"
	key runs.big.txt diagbig_ready_ms "values pair: ready, ms" "$m"
	key runs.big.txt diagbig_open_ms "values pair: open, ms" "$m"
	key runs.big.txt diagbig_time_paint_ms "values pair: time view opened at once → maps drawn, ms" "$m"
	key runs.big.txt diagbig_time_lanes_ms "values pair: → every lane of values drawn, ms" "$m"
	key runs.big.txt diagbig_lanes_range1_ms "values pair: a range selected → its lanes drawn, ms (diagnose's analysis running)" "$m"
	key runs.big.txt diagbig_lanes_range2_ms "values pair: another range → its lanes drawn, ms" "$m"
	key runs.big.txt diagbig_built_ms "values pair: diagnose's page built, ms after its first GET" "$m"
	key runs.big.txt diagbig_built_cpu_ms "values pair: server CPU by then, ms" "$m"
	key runs.big.txt diagbig_index_swap_ms "values pair: diagnose clicked on the index, in place, wall ms" "$m"
	key runs.big.txt diagbig_fn_swap_ms "values pair: a function's name on diagnose, in place, wall ms" "$m"
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $SECONDS s in all"
