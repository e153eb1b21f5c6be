#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: the sqlite3 shell loads a list of 300,000
# file paths into an in-memory table (.import) and counts the temporary files
# at least four directories deep:
#   SELECT count(*) FROM files WHERE path LIKE '%/%/%/%/%.tmp'
#   normal: paths 3 to 6 directories deep
#   buggy:  the same paths, but every 100th is 30 directories deep
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) deep=0 ;;
buggy) deep=30 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v deep="$deep" 'BEGIN {
	split("src lib docs build cache data home var opt usr share node_modules vendor test", w, " ")
	for (i = 0; i < 300000; i++) {
		d = 3 + i % 4
		if (deep > 0 && i % 100 == 1) d = deep
		p = ""
		for (j = 0; j < d; j++) p = p "/" w[1 + (i * 7 + j * 3) % 14] (j % 3 == 0 ? i % 97 : "")
		printf "%s/f%d.%s\n", p, i, (i % 50 == 0 ? "tmp" : "txt")
	}
}' >"$tmp/paths.txt"
cat >"$tmp/query.sql" <<SQL
CREATE TABLE files(path TEXT);
.mode csv
.import $tmp/paths.txt files
.mode list
SELECT count(*) FROM files;
SELECT count(*) FROM files WHERE path LIKE '%/%/%/%/%.tmp';
SQL
"$@" "$out/sqlite3" -batch :memory: <"$tmp/query.sql" >/dev/null
