#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: zstd -19 compresses a generated 34 MiB
# disk image: 4 MiB of system-log text in slices, each slice followed by
# free space (zeros), 30 MiB of zeros in all. The two modes hold the same
# text and the same number of zeros; only the length of the runs differs.
#   normal: 60 slices, each followed by 512 KiB of zeros
#   buggy:  8 slices, each followed by 3,840 KiB of zeros
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) slices=60 zeros=512 ;;
buggy) slices=8 zeros=3840 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN {
	srand(1); n = 0
	split("sshd cron kernel systemd dhclient postfix nginx", svc, " ")
	while (n < 4194304) {
		line = sprintf("2026-11-%02d %02d:%02d:%02d host%d %s[%d]: session %d for user%d from 10.%d.%d.%d port %d",
			1 + int(rand() * 28), int(rand() * 24), int(rand() * 60), int(rand() * 60), int(rand() * 16),
			svc[1 + int(rand() * 7)], 1000 + int(rand() * 30000), int(rand() * 100000),
			int(rand() * 500), int(rand() * 256), int(rand() * 256), int(rand() * 256), 1024 + int(rand() * 60000))
		print line; n += length(line) + 1
	}
}' | head -c 4194304 >"$tmp/text"
split -a 3 -d -n "$slices" "$tmp/text" "$tmp/slice."
img=$tmp/disk.img
: >"$img"
for s in "$tmp"/slice.*; do
	cat "$s" >>"$img"
	head -c "$((zeros * 1024))" /dev/zero >>"$img"
done
"$@" "$out/zstd" -19 -q -c "$img" >/dev/null
