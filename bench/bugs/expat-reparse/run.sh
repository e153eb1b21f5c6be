#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: xmlwf -r (read(2) in 8 KiB pieces, each
# handed to XML_ParseBuffer) checks generated documents.
#   normal: 300,000 small elements (15 MB), read 12 times
#   buggy:  1,000 small elements and one start tag whose attribute value is
#           8 MB long, read once
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
doc=$tmp/doc.xml
case $mode in
normal)
	awk 'BEGIN { print "<doc>"; for (i = 0; i < 300000; i++) printf "<item id=\"%d\" name=\"n%d\">text %d</item>\n", i, i, i; print "</doc>" }' >"$doc"
	set -- "$@" "$out/xmlwf" -r "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc" "$doc"
	;;
buggy)
	awk 'BEGIN { print "<doc>"; for (i = 0; i < 1000; i++) printf "<item id=\"%d\" name=\"n%d\">text %d</item>\n", i, i, i
		printf "<big value=\""; s = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		for (i = 0; i < 80000; i++) printf "%s", s; print "\"/>"; print "</doc>" }' >"$doc"
	set -- "$@" "$out/xmlwf" -r "$doc"
	;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
"$@" >/dev/null
