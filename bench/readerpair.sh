#!/usr/bin/env bash
# Two culprit binaries on the same recordings, as interleaved pairs (the
# order alternating), for the readers that go through samples in time order:
# the speedscope and Chrome exports of a 1M-sample run and of it repeated to
# 10M, latency (text and Chrome) and contexts on 1M and 10M events, diagnose on 1M and 10M
# value samples, and report on the 1M-sample run. Prints one row per pair:
# wall, CPU (user+sys) and peak RSS of each binary, and the load average.
#
#   bench/readerpair.sh OLD NEW [DIR]
#
# DIR (default bench/out/report, where bench/report.sh leaves them) holds
# a.rec (1M samples), seed.rec and seed-base.rec (IntroPerf recordings)
# and vseed.rec (a recording of vprof_wrong with values); the 1M- and
# 10M-record files are made from them with bench/replicate and
# bench/genvalues. ONLY, when set, is a regular expression: only the
# commands it matches run. Needs GNU time and go.
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${3:-$root/bench/out/report}
cd "$dir"
(cd "$root" && go build -o "$dir/replicate" ./bench/replicate && go build -o "$dir/genvalues" ./bench/genvalues)
only=${ONLY:-.}
want() { grep -Eq -- "$only" <<<"$*"; }
! want ip.rec || [ -f ip.rec ] || ./replicate -n 1000000 seed.rec ip.rec
! want big.rec || [ -f big.rec ] || ./replicate -n 10000000 a.rec big.rec
! want ipbig.rec || [ -f ipbig.rec ] || ./replicate -n 10000000 seed.rec ipbig.rec
! want vn.rec || [ -f vn.rec ] || ./genvalues -values 1000000 vseed.rec vn.rec vb.rec 2>/dev/null
! want vbign.rec || [ -f vbign.rec ] || ./genvalues -values 10000000 vseed.rec vbign.rec vbigb.rec 2>/dev/null
m() {
	/usr/bin/time -o t.txt -f "%e %U %S %M" "$@" >/dev/null 2>&1 || true
	awk '{printf "%s s, %.2f s, %d MiB", $1, $2+$3, $4/1024}' t.txt
}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| command | old: wall, CPU, RSS | new: wall, CPU, RSS | load |"
echo "|---|---|---|---|"
for args in "export --format speedscope -o - a.rec" "export --format chrome -o - a.rec" "latency ip.rec" \
	"latency --format chrome -o - ip.rec" "contexts --base seed-base.rec --buggy ip.rec" \
	"export --format speedscope -o - big.rec" "export --format chrome -o - big.rec" "latency ipbig.rec" \
	"latency --format chrome -o - ipbig.rec" "contexts --base seed-base.rec --buggy ipbig.rec" \
	"diagnose --normal vn.rec --buggy vb.rec" "diagnose --normal vbign.rec --buggy vbigb.rec" "report a.rec"; do
	want "$args" || continue
	n=3
	case $args in *big*) n=2 ;; esac
	for ((i = 0; i < n; i++)); do
		if ((i % 2 == 0)); then
			o=$(m "$old" $args)
			w=$(m "$new" $args)
		else
			w=$(m "$new" $args)
			o=$(m "$old" $args)
		fi
		echo "| $args | $o | $w | $(cut -d' ' -f1 /proc/loadavg) |"
	done
done
rm -f big.rec ipbig.rec vbign.rec vbigb.rec t.txt
echo "# end $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
