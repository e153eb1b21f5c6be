#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: xmllint evaluates the XPath lang() test on
# every element of a generated document (with a DTD declaring xml:lang), 100
# times (--repeat). Elements nest 30 deep.
#   normal: 300 nests, one namespace declared on the root
#   buggy:  8 nests, 50 namespaces declared on the root
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) nests=300 namespaces=1 ;;
buggy) nests=8 namespaces=50 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../libxml2.sh"
libxml2_lang_doc "$nests" "$namespaces" >"$tmp/doc.xml"
"$@" "$out/xmllint" --repeat --xpath 'count(//item[lang("en")])' "$tmp/doc.xml" >/dev/null
