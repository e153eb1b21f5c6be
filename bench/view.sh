#!/usr/bin/env bash
# culprit view on 1M samples: time to first paint, interaction latency and
# memory, in headless Chromium (bench/viewtime, chromedp).
#
# bench/reporttarget (two threads, a four-level call tree; -O2 with frame
# pointers) runs 2 s of CPU time per thread under `culprit record -F 49999`
# (about 200k samples), and bench/replicate repeats that recording's samples
# (real stacks, shifted in time) to 1M. Then RUNS times: culprit view is
# started on it and Chromium, started beforehand, opens the time view and
# pprof's flame graph, a time range's flame graph (a new pprof UI built on
# the server) twice, and pprof's other views. Per run one line; then medians.
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
#                 renderer), the wall time seen from chromedp, the
#                 renderer's thread time (Performance.getMetrics
#                 TaskDuration) and the server's CPU time: the last two
#                 are what a busy machine does not inflate
#   in place again  the first range chosen again in the time view: the
#                 server answers from what it kept; against "again",
#                 which loads the same range's page
#   filter in place  on the whole flame graph, a function (mid_compute)
#                 hidden from pprof's action menu: drawn in place;
#                 "loaded": the same query's page loaded afresh
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
# With BASE-REV (a git revision), culprit built at that revision runs
# too, each run right after the current one's on the same recording, and
# a second row gives its medians: the two rows compare on one machine at
# one load.
#
# Needs root (culprit record), gcc, go and chromium.
set -euo pipefail
runs=${1:-5}
baserev=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/view
head=$(git -C "$root" rev-parse --short HEAD) # what is built below
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/culprit" "$root/cmd/culprit"
(cd "$root" && go build -o "$out/viewtime" ./bench/viewtime)
if [[ -n $baserev ]]; then
	tree=$(mktemp -d)
	trap 'rm -rf "$tree"' EXIT
	git -C "$root" archive "$baserev" | tar -x -C "$tree"
	(cd "$tree" && CGO_ENABLED=0 go build -o "$out/culprit.base" ./cmd/culprit)
fi
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/target" "$root/bench/reporttarget/main.c"
chromium=$(command -v chromium || command -v chromium-browser)
cd "$out"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# culprit $head, $("$chromium" --version 2>/dev/null | head -1), $(go version | cut -d' ' -f3)"
./culprit record -F 49999 -o small.rec -- ./target 2 2 2>rec.txt >/dev/null
(cd "$root" && go run ./bench/replicate -n 1000000 "$out/small.rec" "$out/big.rec")
echo "# $(grep -o '[0-9]* samples' rec.txt | head -1) recorded, repeated to 1000000 ($(stat -c %s big.rec) bytes)"
./culprit record --events cpu,syscalls,sched -F 49999 -o events.rec -- ./target 2 2 2>rec.events.txt >/dev/null
(cd "$root" && go run ./bench/replicate -n 1000000 "$out/events.rec" "$out/bigevents.rec")
echo "# with kernel events: $(grep -o '[0-9]* samples' rec.events.txt | head -1) recorded (samples and events), repeated to 1000000, against the recording as base"
: >runs.txt
: >runs.base.txt
for ((i = 0; i < runs; i++)); do
	./viewtime -culprit ./culprit -chromium "$chromium" -events bigevents.rec -events-base events.rec big.rec | tee -a runs.txt
	if [[ -n $baserev ]]; then
		./viewtime -culprit ./culprit.base -chromium "$chromium" -events bigevents.rec -events-base events.rec big.rec | tee -a runs.base.txt
	fi
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR == 0 ? "-" : NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "| culprit (1M samples) | ready ms (CPU ms) | open ms (CPU ms) | time view paint ms (in page) | time data ms | flame graph paint ms (server CPU ms) | range flame graph first ms (server CPU ms) | again ms | range in place: page ms, wall ms (renderer ms, server CPU ms) | range in place again: page ms, wall ms (renderer ms) | filter in place: page ms, wall ms (renderer ms, server CPU ms) | filter loaded ms | top paint ms | flame from top in place: page ms, wall ms (renderer ms, server CPU ms) | top filter in place: page ms, wall ms (renderer ms, server CPU ms) | top filter loaded ms | flame from index in place: page ms, wall ms (renderer ms, server CPU ms) | time from index in place: page ms, wall ms (renderer ms, server CPU ms) | fn from index in place: page ms, wall ms (renderer ms, server CPU ms) | fn form in place: page ms, wall ms (renderer ms, server CPU ms) | fn from top in place: page ms, wall ms (renderer ms, server CPU ms) | fn loaded ms | fn GET ms | first GET ms: latency, contexts, off-CPU | latency from index in place: page ms, wall ms (renderer ms, server CPU ms) | contexts from latency in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU from contexts in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU early from contexts in place: page ms, wall ms (renderer ms, server CPU ms) | off-CPU from latency in place: page ms, wall ms (renderer ms, server CPU ms) | latency from off-CPU in place: page ms, wall ms (renderer ms, server CPU ms) | renderer ms: flame, range, top (page kB) | top ms | graph ms | peek ms | source ms | disasm ms | views again, max ms | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
row() {
	local file=$1 name=$2
	get() { tr ' ' '\n' <"$file" | grep "^$1=" | cut -d= -f2 | median; }
	echo "| $name | $(get ready_ms) ($(get ready_cpu_ms)) | $(get open_ms) ($(get open_cpu_ms)) | $(get time_view_paint_ms) ($(get time_view_drawn_ms)) | $(get time_data_ms) | $(get flamegraph_paint_ms) ($(get flamegraph_cpu_ms)) | $(get range_flamegraph_first_ms) ($(get range_cpu_ms)) | $(get range_flamegraph_again_ms) | $(get range_inplace_page_ms), $(get range_inplace_ms) ($(get range_inplace_task_ms), $(get range_inplace_cpu_ms)) | $(get range_inplace_again_page_ms), $(get range_inplace_again_ms) ($(get range_inplace_again_task_ms)) | $(get filter_inplace_page_ms), $(get filter_inplace_ms) ($(get filter_inplace_task_ms), $(get filter_inplace_cpu_ms)) | $(get filter_loaded_ms) | $(get top_paint_ms) | $(get flame_swap_page_ms), $(get flame_swap_ms) ($(get flame_swap_task_ms), $(get flame_swap_cpu_ms)) | $(get top_filter_swap_page_ms), $(get top_filter_swap_ms) ($(get top_filter_swap_task_ms), $(get top_filter_swap_cpu_ms)) | $(get top_filter_loaded_ms) | $(get flame_index_swap_page_ms), $(get flame_index_swap_ms) ($(get flame_index_swap_task_ms), $(get flame_index_swap_cpu_ms)) | $(get time_index_swap_page_ms), $(get time_index_swap_ms) ($(get time_index_swap_task_ms), $(get time_index_swap_cpu_ms)) | $(get fn_index_swap_page_ms), $(get fn_index_swap_ms) ($(get fn_index_swap_task_ms), $(get fn_index_swap_cpu_ms)) | $(get fn_form_swap_page_ms), $(get fn_form_swap_ms) ($(get fn_form_swap_task_ms), $(get fn_form_swap_cpu_ms)) | $(get fn_top_swap_page_ms), $(get fn_top_swap_ms) ($(get fn_top_swap_task_ms), $(get fn_top_swap_cpu_ms)) | $(get fn_loaded_ms) | $(get fn_get_ms) | $(get latency_first_get_ms), $(get contexts_first_get_ms), $(get offcpu_first_get_ms) | $(get latency_index_swap_page_ms), $(get latency_index_swap_ms) ($(get latency_index_swap_task_ms), $(get latency_index_swap_cpu_ms)) | $(get contexts_swap_page_ms), $(get contexts_swap_ms) ($(get contexts_swap_task_ms), $(get contexts_swap_cpu_ms)) | $(get offcpu_swap_page_ms), $(get offcpu_swap_ms) ($(get offcpu_swap_task_ms), $(get offcpu_swap_cpu_ms)) | $(get offcpu_early_swap_page_ms), $(get offcpu_early_swap_ms) ($(get offcpu_early_swap_task_ms), $(get offcpu_early_swap_cpu_ms)) | $(get offcpu_latency_swap_page_ms), $(get offcpu_latency_swap_ms) ($(get offcpu_latency_swap_task_ms), $(get offcpu_latency_swap_cpu_ms)) | $(get latency_offcpu_swap_page_ms), $(get latency_offcpu_swap_ms) ($(get latency_offcpu_swap_task_ms), $(get latency_offcpu_swap_cpu_ms)) | $(get flame_task_ms), $(get range_task_ms), $(get top_task_ms) ($(get flame_kb), $(get range_kb), $(get top_kb)) | $(get top_ms) | $(get graph_ms) | $(get peek_ms) | $(get source_ms) | $(get disasm_ms) | $(get views_again_max_ms) | $(($(get peak_rss_kib | cut -d. -f1) / 1024)) |"
}
row runs.txt "$head"
if [[ -n $baserev ]]; then
	row runs.base.txt "$(git -C "$root" rev-parse --short "$baserev")"
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
