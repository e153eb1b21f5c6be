#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: zstd -19 compresses a generated disk
# image: 8 pieces of system-log text (512 KiB each, 4 MiB in all).
#   normal: the pieces one after the other
#   buggy:  the same pieces, each followed by 8 MiB of zeros (free space),
#           64 MiB of zeros in all
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) zeros=0 ;;
buggy) zeros=8 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
img=$tmp/disk.img
: >"$img"
for piece in 1 2 3 4 5 6 7 8; do
	awk -v piece="$piece" 'BEGIN {
		srand(piece); n = 0
		split("sshd cron kernel systemd dhclient postfix nginx", svc, " ")
		while (n < 524288) {
			line = sprintf("2026-11-%02d %02d:%02d:%02d host%d %s[%d]: session %d for user%d from 10.%d.%d.%d port %d",
				piece + 20, int(rand() * 24), int(rand() * 60), int(rand() * 60), int(rand() * 16),
				svc[1 + int(rand() * 7)], 1000 + int(rand() * 30000), int(rand() * 100000),
				int(rand() * 500), int(rand() * 256), int(rand() * 256), int(rand() * 256), 1024 + int(rand() * 60000))
			print line; n += length(line) + 1
		}
	}' | head -c 524288 >>"$img"
	if [ "$zeros" -gt 0 ]; then
		head -c "$((zeros * 1024 * 1024))" /dev/zero >>"$img"
	fi
done
"$@" "$out/zstd" -19 -q -c "$img" >/dev/null
