#!/usr/bin/env bash
# The time view's lanes of sampled values on a large pair of recordings:
# how long `culprit view --base NORMAL BUGGY` takes until the first
# source's lane is answered (every value of the recordings read), the
# server's peak memory (VmHWM) and CPU time then, and one request for
# three lanes of a one-second range.
#
#   bench/viewlanes.sh CULPRIT NORMAL BUGGY
#
# bench/view.sh makes such pairs (vprof-normal-big.rec, vprof-buggy-big.rec:
# 32M values a side). One line of key=value pairs is printed.
set -euo pipefail
if [[ $# -ne 3 ]]; then
	echo "usage: bench/viewlanes.sh CULPRIT NORMAL BUGGY" >&2
	exit 2
fi
bin=$1
out=$(mktemp)
lane=$(mktemp)
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -f "$out" "$lane"
}
trap cleanup EXIT
start=$(date +%s%N)
"$bin" view --base "$2" "$3" >"$out" 2>/dev/null &
pid=$!
url=
until [[ -n $url ]]; do
	kill -0 "$pid" 2>/dev/null || { echo "culprit view exited before printing its URL" >&2; exit 1; }
	url=$(grep -o 'http://[^ ]*' "$out" | head -1 || true)
	sleep 0.05
done
ready=$(( ($(date +%s%N) - start) / 1000000 ))
until [[ $(curl -s -o "$lane" -w '%{http_code}' "${url}time/values?src=0") == 200 ]]; do
	sleep 0.5
done
t=$(( ($(date +%s%N) - start) / 1000000 ))
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
cpu=$(awk '{print ($14 + $15) * 10}' /proc/$pid/stat)
t1=$(date +%s%N)
curl -s -o /dev/null "${url}time/values?src=0&src=1&src=2&from=10s&to=11s"
rt=$(( ($(date +%s%N) - t1) / 1000000 ))
echo "ready_ms=$ready lane_ms=$t vmhwm_kib=$hwm vmrss_kib=$rss cpu_ms=$cpu range3_ms=$rt load=$(cut -d' ' -f1 /proc/loadavg)"
